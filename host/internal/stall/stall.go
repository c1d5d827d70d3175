// Package stall bounds an HTTP exchange by its progress rather than its
// length: an exchange is cancelled once neither its request body nor its
// reply body has moved a byte for an idle bound. The wait for the reply's
// headers counts as no progress, so an exchange with small bodies is
// bounded by about the idle bound in all; one that moves megabytes is not
// bounded at all while the bytes keep moving.
//
// It is for the exchanges whose size a total timeout cannot know: a
// batch's upload and results (hundreds of megabytes), a registry's blobs.
// A server that stalls is noticed within one idle bound; a slow link is
// not mistaken for it.
//
// Invariant: a guard's context ends with an *Error cause only when its
// idle bound passed with no byte moved; stop ends it with
// context.Canceled. A body read that fails because of a stall returns the
// *Error, so the words reach whoever reports the failure.
package stall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Error is why a guarded exchange was cancelled: nothing moved for Idle.
type Error struct{ Idle time.Duration }

func (e *Error) Error() string {
	return fmt.Sprintf("nothing sent or received for %s", e.Idle)
}

// guard cancels its context when its timer fires; each byte moved re-arms
// it.
type guard struct {
	ctx   context.Context
	idle  time.Duration
	timer *time.Timer
}

type key struct{}

// WithGuard returns ctx, cancelled with an *Error once the bodies of the
// requests made with it through Exchange or Transport (and of their
// replies) have not moved for idle. stop ends the guard; call it once the
// last reply is read.
func WithGuard(ctx context.Context, idle time.Duration) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	g := &guard{idle: idle}
	g.timer = time.AfterFunc(idle, func() { cancel(&Error{Idle: idle}) })
	g.ctx = context.WithValue(ctx, key{}, g)
	return g.ctx, func() {
		g.timer.Stop()
		cancel(context.Canceled)
	}
}

// Cause is the stall that ended ctx, if that is why it ended.
func Cause(ctx context.Context) (*Error, bool) {
	e, ok := context.Cause(ctx).(*Error)
	return e, ok
}

// Exchange sends req with next, its request and reply bodies watched by
// the guard of req's context, if it has one: SDK client middleware calls
// it.
func Exchange(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	g, _ := req.Context().Value(key{}).(*guard)
	if g == nil {
		return next(req)
	}
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &body{rc: req.Body, g: g}
	}
	resp, err := next(req)
	if err != nil {
		return resp, g.explain(err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body = &body{rc: resp.Body, g: g}
	}
	return resp, nil
}

// explain is err, or the stall that caused it.
func (g *guard) explain(err error) error {
	if e, ok := Cause(g.ctx); ok && err != nil && !errors.Is(err, e) {
		return fmt.Errorf("%w (%w)", e, err)
	}
	return err
}

// body re-arms its guard on every read that moved bytes.
type body struct {
	rc io.ReadCloser
	g  *guard
	// onClose ends a per-request guard (Transport).
	onClose func()
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.g.timer.Reset(b.g.idle)
	}
	if err != nil && err != io.EOF {
		err = b.g.explain(err)
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	if b.onClose != nil {
		b.onClose()
	}
	return err
}

// Transport guards each request it carries on its own: the guard starts
// with the request and ends when its reply's body is closed (or the
// request fails).
type Transport struct {
	// Base carries the requests; http.DefaultTransport when nil.
	Base http.RoundTripper
	// Idle is the bound on an exchange that moves nothing.
	Idle time.Duration
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx, stop := WithGuard(req.Context(), t.Idle)
	resp, err := Exchange(req.WithContext(ctx), base.RoundTrip)
	if err != nil || resp == nil || resp.Body == nil {
		stop()
		return resp, err
	}
	resp.Body.(*body).onClose = stop
	return resp, nil
}

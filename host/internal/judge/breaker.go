package judge

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentanvil/anvil/abi"
)

// breakerThreshold is how many calls in a row must end in a fault no retry
// can fix (connection refused, no such host, TLS, 401, 403, 404) before the
// judge stops calling. One could be a blip; three in a row, with no success
// between, is a judge that is down or a key that is wrong.
const breakerThreshold = 3

// breaker is the judge's circuit breaker. Once open it stays open for the
// judge's life (a run): every later call fails at once with
// judge_unavailable, without HTTP, and the engine stops the run. No
// half-open probing: a run that cannot reach its judge cannot verify
// anything that needs it, and a later run starts closed.
type breaker struct {
	mu     sync.Mutex
	streak int
	// first is the detail of the streak's first failure: the cause named.
	first string
	// open is the error every call gets once the breaker is open.
	open atomic.Pointer[abi.Error]
	// notify is set when the breaker opens and cleared by the one caller
	// that then calls OnUnavailable (notifyUnavailable).
	notify atomic.Bool
}

// unavailable returns a copy of the open breaker's error, nil while closed.
func (j *Judge) unavailable() *abi.Error {
	e := j.breaker.open.Load()
	if e == nil {
		return nil
	}
	cp := *e
	return &cp
}

// Unavailable reports why the judge stopped calling its server (its breaker
// opened), or nil while it still calls. The error is an *abi.Error with
// code judge_unavailable whose message names the cause.
func (j *Judge) Unavailable() error {
	if e := j.unavailable(); e != nil {
		return e
	}
	return nil
}

// trip records the outcome of one call made upstream (f nil: it succeeded)
// and opens the breaker on the threshold-th unfixable failure in a row. A
// failure that shows the server reachable and answering (429, 5xx, 400)
// ends the streak; a timeout or a cancellation says nothing either way.
func (j *Judge) trip(ctx context.Context, f *failure, err *abi.Error) {
	b := &j.breaker
	b.mu.Lock()
	switch {
	case f == nil:
		b.streak, b.first = 0, ""
		b.mu.Unlock()
		return
	case f.kind == failTimeout || f.kind == failStalled || f.kind == failCancelled || f.kind == failUnreachable:
		b.mu.Unlock()
		return
	case !f.unfixable():
		b.streak, b.first = 0, ""
		b.mu.Unlock()
		return
	}
	b.streak++
	if b.streak == 1 {
		b.first = strings.TrimPrefix(err.Message, j.prefix())
	}
	if b.streak < breakerThreshold || b.open.Load() != nil {
		b.mu.Unlock()
		return
	}
	open := j.errorf(abi.CodeJudgeUnavailable, err.Retryable,
		"unavailable: %d calls in a row failed in a way retrying cannot fix, so the judge is not called again in this run; first: %s",
		b.streak, b.first)
	b.open.Store(open)
	cause := b.first
	b.mu.Unlock()

	// The one WARN for the whole outage; the requests it fails say so in
	// their own errors.
	j.log.LogAttrs(ctx, slog.LevelWarn, "judge unavailable; every further request fails at once",
		slog.String("judge", j.cfg.Name), slog.String("model", j.cfg.Model), slog.String("base_url", j.cfg.BaseURL),
		slog.Int("failures_in_a_row", breakerThreshold), slog.String("cause", cause))
	// OnUnavailable cancels the run, so it waits until the request that
	// tripped the breaker has its response: called from here, the caller
	// waiting on this call would give up first and drop its usage, and the
	// summary would count fewer requests than the server received.
	b.notify.Store(true)
}

// notifyUnavailable calls OnUnavailable once the breaker has opened. The
// public entry points defer it, so it runs after their response (and its
// usage) is complete.
func (j *Judge) notifyUnavailable() {
	if j.onUnavailable != nil && j.breaker.notify.CompareAndSwap(true, false) {
		j.onUnavailable(j.Unavailable())
	}
}

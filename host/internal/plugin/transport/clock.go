package transport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is an invocation's time limit (limits.timeout), counted while the
// guest runs and stopped while it waits on the host for a judge call or an
// embedding. Those waits are the judge's time, bounded by the judge's own
// timeout and retries, and a batched judge may take hours to answer: a
// deadline that counted them would stop every case of a batched run, and
// blame the plugin (a timeout is a plugin fault) for a slow judge.
//
// The context Start returns ends with context.DeadlineExceeded when the
// guest has used its limit, so the transports read it as they read a
// deadline; it also ends when the parent does, with the parent's error.
// Holds nest and may overlap (a process guest may wait on several host
// calls at once): the clock runs only while none is held.
type Clock struct {
	parent context.Context
	done   chan struct{}
	err    atomic.Pointer[error]
	once   sync.Once
	// unwatch stops the parent's cancellation from reaching the clock.
	unwatch func() bool
	// deadline is what Deadline reports: the parent's, else a ceiling.
	deadline time.Time

	mu    sync.Mutex
	left  time.Duration // of the limit, when the clock last stopped
	since time.Time     // when it last started; zero while held
	holds int
	timer *time.Timer
}

// waitCeiling bounds what an invocation may spend waiting on the host, for
// Deadline: a batched judge's completion window is 24 hours.
const waitCeiling = 25 * time.Hour

// StartClock starts an invocation's clock with limit to run; Stop releases
// it. The returned context is the clock itself.
func StartClock(parent context.Context, limit time.Duration) *Clock {
	now := time.Now()
	c := &Clock{parent: parent, done: make(chan struct{}), left: limit, since: now}
	c.deadline = now.Add(limit + waitCeiling)
	if d, ok := parent.Deadline(); ok {
		c.deadline = d
	}
	c.timer = time.AfterFunc(limit, c.expire)
	c.unwatch = context.AfterFunc(parent, func() { c.end(parent.Err()) })
	return c
}

// Stop ends the clock's context (with context.Canceled, when nothing ended
// it before) and releases its timer.
func (c *Clock) Stop() {
	c.mu.Lock()
	c.timer.Stop()
	c.mu.Unlock()
	c.unwatch()
	c.end(context.Canceled)
}

// Hold stops the clock until release is called: the guest is waiting on
// the host. Nil-safe, so a guard without a clock (describing, warming)
// holds nothing.
func (c *Clock) Hold() (release func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	if c.holds == 0 && !c.since.IsZero() {
		c.timer.Stop()
		c.left -= time.Since(c.since)
		c.since = time.Time{}
	}
	c.holds++
	c.mu.Unlock()
	var once sync.Once
	return func() { once.Do(c.release) }
}

func (c *Clock) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds--
	if c.holds > 0 || c.Err() != nil {
		return // still held, or ended: no timer to run again
	}
	c.since = time.Now()
	c.timer.Reset(max(c.left, 0))
}

// expire is the timer's: it ends the context unless a hold began after the
// timer fired but before this ran, or time was given back by a release
// that reset the timer (then the timer fires again when it is due).
func (c *Clock) expire() {
	c.mu.Lock()
	over := c.holds == 0 && !c.since.IsZero() && time.Since(c.since) >= c.left
	c.mu.Unlock()
	if over {
		c.end(context.DeadlineExceeded)
	}
}

func (c *Clock) end(err error) {
	c.once.Do(func() {
		c.err.Store(&err)
		close(c.done)
	})
}

// Deadline is the parent's, else a ceiling the clock cannot pass: its
// limit plus the longest a guest may wait on the host. Its own end cannot
// be known ahead, since it stops while the guest waits, so it is not
// reported; but gRPC sends a deadline to a process plugin, and without one
// a guest SDK that reads the time left as its callbacks' timeout gets an
// infinite one, which its gRPC refuses at once (grpcio's time_remaining
// without a deadline: about 1e19 seconds). The clock ends the call by
// cancellation.
func (c *Clock) Deadline() (time.Time, bool) { return c.deadline, true }

// Done is closed when the guest has used its limit or the parent ended.
func (c *Clock) Done() <-chan struct{} { return c.done }

// Err is context.DeadlineExceeded when the guest used its limit, the
// parent's error when the parent ended first, else nil. It reads the
// parent too: the parent's end reaches Done through a goroutine, and a
// caller that cancels and then lets the guest go on must find the call
// cancelled, as a derived context would have it at once.
func (c *Clock) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	if err := c.parent.Err(); err != nil {
		c.end(err)
		return err
	}
	return nil
}

// Value is the parent's.
func (c *Clock) Value(key any) any { return c.parent.Value(key) }

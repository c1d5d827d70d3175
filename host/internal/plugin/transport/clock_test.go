package transport

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestClock: the clock ends with DeadlineExceeded once the guest has run
// its limit, not while a hold is open, and with the parent's error when
// the parent ends first.
func TestClock(t *testing.T) {
	t.Parallel()
	const limit = 50 * time.Millisecond
	t.Run("runs out", func(t *testing.T) {
		c := StartClock(context.Background(), limit)
		defer c.Stop()
		<-c.Done()
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("Err %v; want DeadlineExceeded", c.Err())
		}
		if d, ok := c.Deadline(); !ok || time.Until(d) < 24*time.Hour {
			t.Errorf("deadline %v, %v; want one beyond a batch's 24 h window (the limit alone would cut a waiting process plugin's callbacks)", d, ok)
		}
	})
	t.Run("held", func(t *testing.T) {
		c := StartClock(context.Background(), limit)
		defer c.Stop()
		release := c.Hold()
		inner := c.Hold() // overlapping holds: the clock runs when none is open
		<-time.After(4 * limit)
		inner()
		inner() // a release is idempotent
		select {
		case <-time.After(2 * limit):
		case <-c.Done():
			t.Fatalf("the clock ended (%v) while a hold was open", c.Err())
		}
		release()
		<-c.Done()
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("Err %v; want DeadlineExceeded after the hold", c.Err())
		}
	})
	t.Run("parent cancelled", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		c := StartClock(parent, time.Hour)
		defer c.Stop()
		release := c.Hold()
		defer release()
		cancel()
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err %v; want the parent's Canceled, hold or not", c.Err())
		}
	})
	t.Run("parent deadline", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		c := StartClock(parent, time.Hour)
		defer c.Stop()
		if d, _ := c.Deadline(); !d.Equal(func() time.Time { pd, _ := parent.Deadline(); return pd }()) {
			t.Errorf("deadline %v; want the parent's", d)
		}
		<-c.Done()
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("Err %v; want the parent's DeadlineExceeded", c.Err())
		}
	})
	t.Run("stopped", func(t *testing.T) {
		c := StartClock(context.Background(), time.Hour)
		c.Stop()
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err %v; want Canceled", c.Err())
		}
		c.Hold()() // holding a stopped clock does not restart anything
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err %v after a hold; want Canceled", c.Err())
		}
	})
	t.Run("nil", func(t *testing.T) {
		var c *Clock
		c.Hold()() // a guard outside an invocation has no clock
	})
}

// TestClockErrFollowsTheParentAtOnce: once the parent is cancelled, Err
// says so before the clock's own goroutine has closed Done: a caller that
// cancels and then releases a guest's judge call finds the call cancelled.
func TestClockErrFollowsTheParentAtOnce(t *testing.T) {
	t.Parallel()
	for range 1000 {
		parent, cancel := context.WithCancel(context.Background())
		c := StartClock(parent, time.Hour)
		cancel()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err %v right after the parent's cancel; want Canceled", c.Err())
		}
		<-c.Done()
		c.Stop()
	}
}

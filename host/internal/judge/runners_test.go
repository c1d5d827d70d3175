package judge

import (
	"sync"
	"testing"
	"time"
)

func (r *runners) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// One call after another is served by one runner, kept between calls:
// after the first, each call is handed to the runner waiting for work
// (sent as do sends it, but blocking, so the test does not depend on the
// runner having reached its receive yet).
func TestRunnersKeepARunnerBetweenCalls(t *testing.T) {
	r := newRunners(4)
	r.idle = time.Hour
	for i := range 50 {
		done := make(chan int, 1)
		f := func() { done <- i }
		if i == 0 {
			r.do(f)
		} else {
			r.tasks <- f
		}
		if got := <-done; got != i {
			t.Fatalf("task %d ran as %d", i, got)
		}
	}
	if n := r.count(); n != 1 {
		t.Errorf("%d runners after 50 calls in sequence; want 1", n)
	}
}

// Calls beyond max still start at once: no call waits for a runner.
func TestRunnersNeverMakeACallWait(t *testing.T) {
	r := newRunners(2)
	gate := make(chan struct{})
	var started, finished sync.WaitGroup
	const calls = 7
	started.Add(calls)
	finished.Add(calls)
	for range calls {
		r.do(func() {
			started.Done()
			<-gate
			finished.Done()
		})
	}
	started.Wait() // all seven run together, two of them on runners
	if n := r.count(); n != 2 {
		t.Errorf("%d runners for %d concurrent calls; want the cap, 2", n, calls)
	}
	close(gate)
	finished.Wait()
}

// An idle runner exits after its idle time.
func TestRunnersExitWhenIdle(t *testing.T) {
	r := newRunners(3)
	r.idle = 10 * time.Millisecond
	var wg sync.WaitGroup
	wg.Add(3)
	gate := make(chan struct{})
	for range 3 {
		r.do(func() { <-gate; wg.Done() })
	}
	close(gate)
	wg.Wait()
	waitFor(t, "the runners to exit", func() bool { return r.count() == 0 })
	done := make(chan struct{})
	r.do(func() { close(done) }) // and a new one starts for the next call
	<-done
}

package judge

import (
	"sync"
	"time"
)

// runners run the judge's calls on goroutines that outlive a call.
//
// singleflight runs each flight's work in a goroutine of its own (DoChan),
// and a judge call — openai-go, net/http, the reply decoder — needs more
// stack than a new goroutine starts with: every call grew its stack
// twice, and copying a deep stack (each frame's pointers adjusted from
// its stack map) was 3% of a 20,000-call run's CPU. The flight's
// goroutine now hands the work to a runner and waits, on a stack that
// stays small; a runner keeps the stack it grew for its next call (the
// collector halves an idle goroutine's stack at most once a cycle, so it
// regrows at most once per cycle, not twice per call).
//
// At most max runners wait for work, each for at most runnerIdle; a call
// finding none idle starts one (beyond max, a goroutine for that call
// alone), so no call ever waits for a runner.
type runners struct {
	tasks chan func()
	max   int
	idle  time.Duration // runnerIdle; shorter in tests

	mu      sync.Mutex
	running int
}

// runnerIdle is how long an idle runner waits for work before it exits:
// long enough to span the gaps between one case's calls, short enough
// that a judge no longer used leaves nothing behind for long.
const runnerIdle = 2 * time.Second

func newRunners(max int) *runners {
	return &runners{tasks: make(chan func()), max: max, idle: runnerIdle}
}

// do runs f on a runner and returns at once.
func (r *runners) do(f func()) {
	select {
	case r.tasks <- f: // an idle runner took it
		return
	default:
	}
	r.mu.Lock()
	keep := r.running < r.max
	if keep {
		r.running++
	}
	r.mu.Unlock()
	if !keep {
		go f()
		return
	}
	go r.loop(f)
}

func (r *runners) loop(f func()) {
	idle := time.NewTimer(r.idle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(r.idle)
		select {
		case f = <-r.tasks:
		case <-idle.C:
			r.mu.Lock()
			r.running--
			r.mu.Unlock()
			// A task sent between the timer firing and the count going down
			// would find no runner and no cap to start one: do never
			// blocks on the send, so there is none to lose.
			return
		}
	}
}

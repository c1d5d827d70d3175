package judge

import (
	"context"
	"sync/atomic"

	"github.com/agentanvil/anvil/abi"
)

// flightState is the context shared by the callers of one in-flight
// request. The upstream work runs under it rather than under the first
// caller's context, so one caller giving up does not fail the others; it is
// cancelled only when every caller has gone.
type flightState struct {
	ctx     context.Context
	cancel  context.CancelFunc
	waiters int
	// claimed is set by the one caller that carries the call's cost in
	// its Usage: the first to receive the result, or the last to give up.
	claimed atomic.Bool
}

// shared is the singleflight layer: identical requests in flight at the
// same time make one call of work, whose result they all receive.
//
// One caller carries the cost in Usage; the others get the same reply with
// USD, calls and attempts zero, so summing responses never counts one
// upstream call twice. A call whose callers all gave up is still carried:
// the last to leave waits for the cancelled work to end and reports what it
// spent, since the server may have received it (a run stopping because the
// breaker opened would otherwise count fewer requests than were sent).
func (j *Judge) shared(ctx context.Context, p *plan, work func(context.Context, *plan) abi.JudgeResponse) abi.JudgeResponse {
	leader := false
	// Joining the waiters and joining the flight happen under one lock, so
	// a counted waiter is always attached to the call its context governs.
	// DoChan does not block (the work runs in its own goroutine), and the
	// lock order is always flightMu before the group's own lock.
	key := p.key
	j.flightMu.Lock()
	st := j.inflight[key]
	if st == nil {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		st = &flightState{ctx: fctx, cancel: cancel}
		j.inflight[key] = st
	}
	st.waiters++
	ch := j.flight.DoChan(key, func() (any, error) {
		leader = true
		// The work runs on a runner (runners.go), whose stack has grown
		// already; this goroutine only waits.
		done := make(chan abi.JudgeResponse, 1)
		j.runners.do(func() { done <- j.safely(func() abi.JudgeResponse { return work(st.ctx, p) }) })
		resp := <-done
		j.flightMu.Lock()
		if j.inflight[key] == st {
			delete(j.inflight, key)
		}
		j.flightMu.Unlock()
		return resp, nil
	})
	j.flightMu.Unlock()

	select {
	case res := <-ch:
		j.leave(key, st, false)
		resp := res.Val.(abi.JudgeResponse)
		if !leader {
			j.counters.shared.Add(1)
		}
		if !st.claimed.CompareAndSwap(false, true) {
			resp.Usage.USD = 0
			resp.Usage.Calls = 0
			resp.Usage.Attempts = 0
		}
		return resp
	case <-ctx.Done():
		resp := abi.JudgeResponse{Error: j.errorf(abi.CodeJudge, false, "cancelled while waiting for the judge: %v", ctx.Err())}
		if !j.leave(key, st, true) {
			return resp // another caller still waits and will carry the cost
		}
		// The work's context is cancelled now, so it ends promptly.
		res := <-ch
		if st.claimed.CompareAndSwap(false, true) {
			u := res.Val.(abi.JudgeResponse).Usage
			resp.Usage = abi.Usage{Model: u.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				USD: u.USD, Calls: u.Calls, Attempts: u.Attempts, UsageUnknown: u.UsageUnknown,
				CachedInputTokens: u.CachedInputTokens, CacheWriteInputTokens: u.CacheWriteInputTokens, Unpriced: u.Unpriced}
		}
		return resp
	}
}

// leave drops a caller from st; the last caller to leave ends the shared
// context, and leave reports whether it was the last. A caller that gave
// up also makes the key forgettable, so a new caller does not join a call
// that is being cancelled.
func (j *Judge) leave(key string, st *flightState, gaveUp bool) (last bool) {
	j.flightMu.Lock()
	defer j.flightMu.Unlock()
	st.waiters--
	if st.waiters > 0 {
		return false
	}
	st.cancel()
	if gaveUp {
		if j.inflight[key] == st {
			delete(j.inflight, key)
		}
		j.flight.Forget(key)
	}
	return true
}

// waiters reports how many callers wait on the in-flight request with key
// (for tests that must know every caller has joined).
func (j *Judge) waiters(key string) int {
	j.flightMu.Lock()
	defer j.flightMu.Unlock()
	if st := j.inflight[key]; st != nil {
		return st.waiters
	}
	return 0
}

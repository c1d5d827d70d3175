package judge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// newGate returns a gate and its opener; the gate is also opened when the
// test ends (before the server closes), so a failing test cannot hang.
func newGate(t *testing.T) (<-chan struct{}, func()) {
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return gate, open
}

// gated holds the server's reply until the gate opens.
func gated(gate <-chan struct{}, content string) judgetest.ReplyFunc {
	return func(judgetest.RecordedRequest) judgetest.Reply {
		<-gate
		return judgetest.Reply{Content: content, Usage: &judgetest.Usage{PromptTokens: 10, CompletionTokens: 5}}
	}
}

// waitFor polls cond (not a sleep-for-synchronisation: it waits for a
// state, with a deadline) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestConcurrentIdenticalRequestsShareOneCall(t *testing.T) {
	const n = 32
	h := newHarness(t, func(c *Config) { c.Price = Price{InputPerMillion: 1e6, OutputPerMillion: 1e6} })
	gate, open := newGate(t)
	h.srv.SetDefault(gated(gate, "shared answer"))

	req := userRequest("same question")
	p, _ := h.judge.plan(req, 0)
	resps := make([]abi.JudgeResponse, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { resps[i] = h.judge.Do(context.Background(), req) })
	}
	// Release the one upstream reply only once every caller has joined, so
	// the assertion does not depend on scheduling.
	waitFor(t, "all callers to join the flight", func() bool { return h.judge.waiters(p.key) == n })
	open()
	wg.Wait()

	if h.srv.Calls() != 1 {
		t.Fatalf("server calls = %d; want exactly 1", h.srv.Calls())
	}
	var paid float64
	for i, r := range resps {
		mustOK(t, r)
		if r.Content != "shared answer" {
			t.Errorf("response %d = %q", i, r.Content)
		}
		paid += r.Usage.USD
	}
	if paid != 15 {
		t.Errorf("sum of USD over responses = %v; want 15 (one call, counted once)", paid)
	}
	tot := h.judge.Totals()
	if tot.Calls != 1 || tot.Shared != n-1 || tot.USD != 15 {
		t.Errorf("Totals = %+v; want 1 call, %d shared, $15", tot, n-1)
	}
}

func TestConcurrentIdenticalRequestsWithCache(t *testing.T) {
	const n = 32
	h := newHarness(t, nil, WithCache(openStore(t), CacheReadWrite))
	var wg sync.WaitGroup
	resps := make([]abi.JudgeResponse, n)
	for i := range n {
		wg.Go(func() { resps[i] = h.judge.Do(context.Background(), userRequest("same")) })
	}
	wg.Wait()
	// Late arrivals find the reply in the cache (it is recorded before the
	// flight releases its callers), early ones share the flight: one call.
	if h.srv.Calls() != 1 {
		t.Fatalf("server calls = %d; want exactly 1", h.srv.Calls())
	}
	for _, r := range resps {
		mustOK(t, r)
	}
}

func TestOneCallerGivingUpDoesNotFailTheOthers(t *testing.T) {
	h := newHarness(t, nil)
	gate, open := newGate(t)
	h.srv.SetDefault(gated(gate, "answer"))
	req := userRequest("q")
	p, _ := h.judge.plan(req, 0)

	quitter, quit := context.WithCancel(context.Background())
	var quitterResp, stayerResp abi.JudgeResponse
	var wg sync.WaitGroup
	wg.Go(func() { quitterResp = h.judge.Do(quitter, req) })
	wg.Go(func() { stayerResp = h.judge.Do(context.Background(), req) })
	waitFor(t, "both callers to join", func() bool { return h.judge.waiters(p.key) == 2 })
	quit()
	waitFor(t, "the quitter to leave", func() bool { return h.judge.waiters(p.key) == 1 })
	open()
	wg.Wait()

	wantError(t, quitterResp, abi.CodeJudge, "cancelled")
	mustOK(t, stayerResp)
	if stayerResp.Content != "answer" || h.srv.Calls() != 1 {
		t.Errorf("stayer got %+v after %d calls; want the answer from one call", stayerResp, h.srv.Calls())
	}
}

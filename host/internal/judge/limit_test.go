package judge

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func TestRequestsPerMinutePacing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RequestsPerMinute = 30; c.MaxConcurrency = 1 })
	for i := range 3 {
		mustOK(t, h.judge.Do(context.Background(), userRequest(strings.Repeat("q", i+1))))
	}
	// Burst 1, then one request every 2 s.
	want := []time.Duration{2 * time.Second, 2 * time.Second}
	if got := h.clock.Sleeps(); !reflect.DeepEqual(got, want) {
		t.Errorf("waits = %v; want %v", got, want)
	}
}

func TestTokensPerMinutePacing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TokensPerMinute = 600 }) // 10 tokens/s, bucket 600
	req := userRequest(strings.Repeat("word ", 400))
	est := estimateMessages(req.Messages)
	if est <= 300 || est >= 600 {
		t.Fatalf("test needs an estimate between 300 and 600, got %d", est)
	}
	mustOK(t, h.judge.Do(context.Background(), req))
	req2 := userRequest(strings.Repeat("WORD ", 400)) // same size, different request
	mustOK(t, h.judge.Do(context.Background(), req2))

	sleeps := h.clock.Sleeps()
	want := time.Duration(float64(2*est-600) / 10 * float64(time.Second))
	if len(sleeps) != 1 || (sleeps[0]-want).Abs() > time.Millisecond {
		t.Errorf("waits = %v; want one of about %v", sleeps, want)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	const limit, n = 2, 6
	h := newHarness(t, func(c *Config) { c.MaxConcurrency = limit })
	release := make(chan struct{})
	var inFlight, peak atomic.Int64
	h.srv.SetDefault(judgetest.ReplyFunc(func(judgetest.RecordedRequest) judgetest.Reply {
		now := inFlight.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		return judgetest.Reply{Content: "ok"}
	}))
	var wg sync.WaitGroup
	resps := make([]abi.JudgeResponse, n)
	for i := range n {
		wg.Go(func() { resps[i] = h.judge.Do(context.Background(), userRequest(strings.Repeat("z", i+1))) })
	}
	// Let the replies go one at a time: each send waits for a handler to
	// take it, so the server only ever holds what the judge let through.
	for range n {
		release <- struct{}{}
	}
	wg.Wait()
	for _, r := range resps {
		mustOK(t, r)
	}
	if peak.Load() > limit || h.srv.Calls() != n {
		t.Errorf("peak in flight = %d, calls = %d; want at most %d, %d calls", peak.Load(), h.srv.Calls(), limit, n)
	}
}

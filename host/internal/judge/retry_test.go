package judge

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func TestRetryAfterIsHonoured(t *testing.T) {
	h := newHarness(t, nil)
	// The HTTP-date reply is built when it is sent: 3 s after the fake
	// clock's time then (which the first 7 s wait has moved).
	var step int
	h.srv.SetDefault(judgetest.ReplyFunc(func(judgetest.RecordedRequest) judgetest.Reply {
		step++
		switch step {
		case 1:
			return judgetest.Reply{Status: 429, RetryAfter: "7"}
		case 2:
			return judgetest.Reply{Status: 429, RetryAfter: h.clock.Now().Add(3 * time.Second).Format(http.TimeFormat)}
		case 3:
			return judgetest.Reply{Status: 503, Header: map[string]string{"Retry-After-Ms": "1500"}}
		}
		return judgetest.Reply{Content: "finally"}
	}))

	resp := h.judge.Do(context.Background(), userRequest("x"))
	mustOK(t, resp)
	if resp.Content != "finally" || resp.Usage.Attempts != 4 || h.srv.Calls() != 4 {
		t.Fatalf("got %q after %d attempts, %d calls; want finally after 4", resp.Content, resp.Usage.Attempts, h.srv.Calls())
	}
	want := []time.Duration{7 * time.Second, 3 * time.Second, 1500 * time.Millisecond}
	if got := h.clock.Sleeps(); !reflect.DeepEqual(got, want) {
		t.Errorf("waits = %v; want %v", got, want)
	}
}

func TestServerErrorThenSuccessIsRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Status: 500}, judgetest.Reply{Content: "ok"}))
	resp := h.judge.Do(context.Background(), userRequest("x"))
	mustOK(t, resp)
	if h.srv.Calls() != 2 || resp.Usage.Attempts != 2 {
		t.Fatalf("calls = %d, attempts = %d; want 2, 2", h.srv.Calls(), resp.Usage.Attempts)
	}
	sleeps := h.clock.Sleeps()
	if len(sleeps) != 1 || sleeps[0] < 0 || sleeps[0] > backoffBase {
		t.Errorf("waits = %v; want one full-jitter wait in [0, %v]", sleeps, backoffBase)
	}
	if tot := h.judge.Totals(); tot.Calls != 1 || tot.Attempts != 2 {
		t.Errorf("Totals = %+v; want 1 call, 2 attempts", tot)
	}
}

func TestAttemptsAreBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = 3 })
	h.srv.SetDefault(judgetest.Reply{Status: 503, ErrorMessage: "overloaded"})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "judge grader (gpt-test)", "server error (HTTP 503) after 4 attempts", "overloaded")
	if !resp.Error.Retryable {
		t.Error("a 503 is not marked retryable")
	}
	if h.srv.Calls() != 4 || resp.Usage.Attempts != 4 {
		t.Fatalf("calls = %d, attempts = %d; want 4", h.srv.Calls(), resp.Usage.Attempts)
	}
	sleeps := h.clock.Sleeps()
	if len(sleeps) != 3 {
		t.Fatalf("waits = %v; want 3", sleeps)
	}
	for i, d := range sleeps {
		if ceiling := backoffBase << i; d < 0 || d > ceiling {
			t.Errorf("wait %d = %v; want within [0, %v]", i+1, d, ceiling)
		}
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	tests := []struct {
		status int
		frag   string
	}{
		{400, "request rejected (HTTP 400)"},
		{401, "authentication failed (HTTP 401)"},
		{403, "permission denied (HTTP 403)"},
		{404, "not found (HTTP 404)"},
		{422, "request rejected (HTTP 422)"},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			h := newHarness(t, nil)
			h.srv.SetDefault(judgetest.Reply{Status: tc.status, ErrorMessage: "nope"})
			resp := h.judge.Do(context.Background(), userRequest("x"))
			wantError(t, resp, abi.CodeJudge, tc.frag, "nope")
			if resp.Error.Retryable {
				t.Error("marked retryable")
			}
			if h.srv.Calls() != 1 || len(h.clock.Sleeps()) != 0 {
				t.Errorf("calls = %d, waits = %v; want exactly 1 call and no wait", h.srv.Calls(), h.clock.Sleeps())
			}
		})
	}
}

func TestRetryAfterTooLongGivesUp(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Status: 429, RetryAfter: "3600"})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "rate limited (HTTP 429) after 1 attempt", "retry after 1h0m0s")
	if h.srv.Calls() != 1 || len(h.clock.Sleeps()) != 0 {
		t.Errorf("calls = %d, waits = %v; want 1 call, no wait", h.srv.Calls(), h.clock.Sleeps())
	}
}

func TestPerAttemptTimeout(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Timeout = Duration(30 * time.Millisecond); c.MaxRetries = 1 })
	h.srv.SetDefault(judgetest.Reply{Hang: true})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "timed out after 30ms per attempt, 2 attempts")
	if !resp.Error.Retryable || h.srv.Calls() != 2 {
		t.Errorf("retryable = %v, calls = %d; want true, 2", resp.Error.Retryable, h.srv.Calls())
	}
}

// stuckClock never lets a wait elapse: only cancellation ends it.
type stuckClock struct{ fakeClock }

func (c *stuckClock) Sleep(ctx context.Context, d time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestCallerCancellationStopsRetrying(t *testing.T) {
	h := newHarness(t, nil, WithClock(&stuckClock{}))
	ctx, cancel := context.WithCancel(context.Background())
	h.srv.SetDefault(judgetest.ReplyFunc(func(judgetest.RecordedRequest) judgetest.Reply {
		cancel() // the caller gives up while the first attempt is on the wire
		return judgetest.Reply{Status: 500}
	}))
	resp := h.judge.Do(ctx, userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "cancelled")
	// The backoff wait can only end by cancellation, so a second call would
	// mean the retry loop ignored it.
	waitFor(t, "the abandoned call to end", func() bool { return h.judge.Totals().Calls == 1 })
	if h.srv.Calls() != 1 {
		t.Errorf("calls = %d; want 1", h.srv.Calls())
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "12"}, 12 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"ms wins", map[string]string{"Retry-After": "10", "Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := retryAfter(h, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBackoffFullJitterBounds(t *testing.T) {
	for attempt := 1; attempt <= 20; attempt++ {
		ceiling := min(backoffBase<<min(attempt-1, 16), backoffCap)
		for range 200 {
			if d := backoff(attempt); d < 0 || d > ceiling {
				t.Fatalf("backoff(%d) = %v; want within [0, %v]", attempt, d, ceiling)
			}
		}
	}
}

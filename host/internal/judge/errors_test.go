package judge

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func TestWrongKeyIsOneClearError(t *testing.T) {
	srv := judgetest.New(t, judgetest.WithAPIKey("sk-the-right-one"), judgetest.EchoWrongKey())
	h := newHarnessOn(t, srv, srv.URL(), nil)
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge,
		"judge grader (gpt-test): authentication failed (HTTP 401)", "$ANVIL_TEST_JUDGE_KEY", "[redacted]")
	if srv.Calls() != 1 {
		t.Errorf("calls = %d; want exactly 1", srv.Calls())
	}
	if resp.Error.Retryable {
		t.Error("a wrong key is marked retryable")
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	t.Setenv("ANVIL_TEST_JUDGE_KEY", "sk-from-env")
	srv := judgetest.New(t, judgetest.WithAPIKey("sk-from-env"))
	j, err := New(testConfig(srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, j.Do(context.Background(), userRequest("x")))
}

func TestMissingKeyIsNamed(t *testing.T) {
	t.Setenv("ANVIL_TEST_JUDGE_KEY", "")
	srv := judgetest.New(t, judgetest.WithAPIKey("sk-needed"))
	j, err := New(testConfig(srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, j.Do(context.Background(), userRequest("x")), abi.CodeJudge,
		"authentication failed (HTTP 401)", "no API key was given ($ANVIL_TEST_JUDGE_KEY is empty)")
}

func TestUnreachableURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	base := "http://" + addr + "/v1"
	h := newHarnessOn(t, nil, base, func(c *Config) { c.MaxRetries = 4 })
	resp := h.judge.Do(context.Background(), userRequest("x"))
	// A refused connection is retried once, not max_retries times: a
	// server that is down stays down, and the breaker counts it.
	wantError(t, resp, abi.CodeJudge, "judge grader (gpt-test): cannot reach "+base+" after 2 attempts", "connection refused")
	if !resp.Error.Retryable {
		t.Error("an unreachable judge is not marked retryable")
	}
	if strings.Count(resp.Error.Message, addr) != 1 {
		t.Errorf("the address is repeated in %q", resp.Error.Message)
	}
	if len(h.clock.Sleeps()) != 1 || resp.Usage.Attempts != 2 || resp.Usage.Calls != 1 {
		t.Errorf("waits = %v, attempts %d, calls %d; want 1 backoff, 2 attempts, 1 call", h.clock.Sleeps(), resp.Usage.Attempts, resp.Usage.Calls)
	}
}

func TestGarbageReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply judgetest.Reply
		frags []string
	}{
		{"html page", judgetest.Reply{RawBody: "<html>login</html>", ContentType: "text/html"},
			[]string{"unparseable reply (HTTP 200)", "text/html, not JSON"}},
		{"json without choices", judgetest.Reply{RawBody: `{"hello": "world"}`, ContentType: "application/json"},
			[]string{"unparseable reply (HTTP 200)", "no choices"}},
		{"truncated body", judgetest.Reply{Content: "cut", Truncate: true},
			[]string{"unparseable reply (HTTP 200)"}},
		{"not json at all", judgetest.Reply{RawBody: "}}}{{{", ContentType: "application/json"},
			[]string{"unparseable reply (HTTP 200)"}},
		// Read strictly: where a lenient decoder picks one of two
		// contents, or writes U+FFFD over bad bytes, the judge refuses.
		{"repeated name", judgetest.Reply{RawBody: `{"choices": [{"message": {"content": "7", "content": "2"}}]}`, ContentType: "application/json"},
			[]string{"unparseable reply (HTTP 200)", "duplicate", `"content"`}},
		{"invalid UTF-8", judgetest.Reply{RawBody: "{\"choices\": [{\"message\": {\"content\": \"7\xff\"}}]}", ContentType: "application/json"},
			[]string{"unparseable reply (HTTP 200)", "UTF-8"}},
		{"mistyped logprob", judgetest.Reply{RawBody: `{"choices": [{"message": {"content": "7"}, "logprobs": {"content": [{"token": "7", "logprob": "high"}]}}]}`, ContentType: "application/json"},
			[]string{"unparseable reply (HTTP 200)", "logprob"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.srv.SetDefault(tc.reply)
			resp := h.judge.Do(context.Background(), userRequest("x"))
			wantError(t, resp, abi.CodeJudge, append([]string{"judge grader (gpt-test)"}, tc.frags...)...)
			if h.srv.Calls() != 1 {
				t.Errorf("calls = %d; want 1", h.srv.Calls())
			}
		})
	}
}

func TestSpendLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Price = Price{InputPerMillion: 1e6} }, WithSpendLimit(15))
	h.srv.SetDefault(judgetest.Reply{Content: "ok", Usage: &judgetest.Usage{PromptTokens: 10}})
	mustOK(t, h.judge.Do(context.Background(), userRequest("a"))) // $10
	mustOK(t, h.judge.Do(context.Background(), userRequest("b"))) // $20: over after this one
	resp := h.judge.Do(context.Background(), userRequest("c"))
	wantError(t, resp, abi.CodeBudget, "spend limit of $15.00 reached")
	if h.srv.Calls() != 2 {
		t.Errorf("calls = %d; want 2", h.srv.Calls())
	}
}

func TestProxyErrorPageIsAServerError(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = 1 })
	h.srv.SetDefault(judgetest.Reply{Status: 502, RawBody: "<html>bad gateway</html>", ContentType: "text/html"})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "server error (HTTP 502) after 2 attempts")
	if h.srv.Calls() != 2 {
		t.Errorf("calls = %d; want 2", h.srv.Calls())
	}
}

// faultyCache fails or panics on demand.
type faultyCache struct {
	getErr             error
	panicGet, panicPut bool
}

func (c *faultyCache) GetJudge(context.Context, string) ([]byte, bool, error) {
	if c.panicGet {
		panic("get exploded")
	}
	return nil, false, c.getErr
}

func (c *faultyCache) PutJudge(context.Context, string, string, []byte) error {
	if c.panicPut {
		panic("put exploded")
	}
	return nil
}

func TestCacheFaults(t *testing.T) {
	t.Run("unreadable cache falls through to upstream", func(t *testing.T) {
		h := newHarness(t, nil, WithCache(&faultyCache{getErr: errors.New("disk on fire")}, CacheReadWrite))
		mustOK(t, h.judge.Do(context.Background(), userRequest("x")))
		if h.srv.Calls() != 1 || !strings.Contains(h.logs.String(), "disk on fire") {
			t.Errorf("calls = %d, logs = %s; want an upstream call and a warning", h.srv.Calls(), h.logs.String())
		}
	})
	for _, tc := range []struct {
		name  string
		cache *faultyCache
	}{
		{"panic on read", &faultyCache{panicGet: true}},
		{"panic on write (inside the shared call)", &faultyCache{panicPut: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, WithCache(tc.cache, CacheReadWrite))
			resp := h.judge.Do(context.Background(), userRequest("x"))
			wantError(t, resp, abi.CodeJudge, "internal error", "exploded")
		})
	}
}

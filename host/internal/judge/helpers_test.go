package judge

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// testKey is the API key tests give the judge; it must never show up in an
// error or a log line.
const testKey = "sk-test-SECRET-0123456789abcdef"

// fakeClock records the waits asked of it and advances instantly.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// harness is a judge wired to a fake server, a fake clock and a captured log.
type harness struct {
	srv   *judgetest.Server
	judge *Judge
	clock *fakeClock
	logs  *testkit.SyncBuffer
}

func testConfig(baseURL string) Config {
	return Config{
		Name:      "grader",
		BaseURL:   baseURL,
		Model:     "gpt-test",
		APIKeyEnv: "ANVIL_TEST_JUDGE_KEY",
		Timeout:   Duration(5 * time.Second),
	}
}

// newHarness starts a fake server and a judge on it; edit adjusts the config.
func newHarness(t testing.TB, edit func(*Config), opts ...Option) *harness {
	t.Helper()
	srv := judgetest.New(t)
	return newHarnessOn(t, srv, srv.URL(), edit, opts...)
}

func newHarnessOn(t testing.TB, srv *judgetest.Server, baseURL string, edit func(*Config), opts ...Option) *harness {
	t.Helper()
	cfg := testConfig(baseURL)
	if edit != nil {
		edit(&cfg)
	}
	h := &harness{srv: srv, clock: newFakeClock(), logs: &testkit.SyncBuffer{}}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	all := append([]Option{WithClock(h.clock), WithLogger(logger), WithAPIKey(testKey)}, opts...)
	j, err := New(cfg, all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.judge = j
	t.Cleanup(func() {
		if strings.Contains(h.logs.String(), testKey) {
			t.Errorf("the API key appears in the log:\n%s", h.logs.String())
		}
	})
	return h
}

func userRequest(text string) abi.JudgeRequest {
	return abi.JudgeRequest{Messages: []abi.Message{
		{Role: "system", Content: "You are a strict grader."},
		{Role: "user", Content: text},
	}}
}

// mustOK fails the test when resp carries an error.
func mustOK(t testing.TB, resp abi.JudgeResponse) {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("unexpected error: %v", resp.Error)
	}
}

// wantError checks code and message fragments, and that the key is absent.
func wantError(t testing.TB, resp abi.JudgeResponse, code abi.Code, fragments ...string) {
	t.Helper()
	if resp.Error == nil {
		t.Fatalf("no error; want %s (content %q)", code, resp.Content)
	}
	if resp.Error.Code != code {
		t.Errorf("error code = %s; want %s (message: %s)", resp.Error.Code, code, resp.Error.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(resp.Error.Message, f) {
			t.Errorf("error message %q lacks %q", resp.Error.Message, f)
		}
	}
	if strings.Contains(resp.Error.Error(), testKey) {
		t.Errorf("the API key appears in the error: %s", resp.Error.Message)
	}
	if resp.Content != "" || resp.JSON != nil || resp.Score != nil {
		t.Errorf("an error response carries content: %+v", resp)
	}
}

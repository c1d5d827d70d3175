package anviltest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/anviltest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// recorder is a testing.TB that keeps what a test would report.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  bool
}

func (r *recorder) Helper()                  {}
func (r *recorder) Logf(string, ...any)      {}
func (r *recorder) Context() context.Context { return context.Background() }
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	runtime.Goexit()
}

// assertOn runs anviltest.Assert on its own goroutine, as a test would.
func assertOn(configPath string, cases ...abi.TestCase) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		anviltest.Assert(r, configPath, cases...)
	}()
	<-done
	return r
}

func config(t *testing.T, url, keyEnv string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 1
judges:
  default: {base_url: %q, model: judge-model, api_key_env: %s, supports_logprobs: true, supports_json_schema: true}
defaults: {store: store.db}
metrics:
  - name: correctness
    kind: geval
    threshold: 0.6
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
`, url, keyEnv)
	path := filepath.Join(dir, "anvil.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	good = abi.TestCase{ID: "fr", Input: "Capital of France?", ActualOutput: "Paris.", ExpectedOutput: "Paris"}
	bad  = abi.TestCase{ID: "au", Input: "Capital of Australia?", ActualOutput: "Sydney.", ExpectedOutput: "Canberra"}
)

func TestAssertFailsWithTheCasesReason(t *testing.T) {
	t.Setenv("ANVILTEST_KEY", "test-key")
	path := config(t, testkit.CapitalsJudge(t).URL(), "ANVILTEST_KEY")

	r := assertOn(path, good, bad)
	if r.fatal || len(r.errors) != 1 {
		t.Fatalf("reported %q, want one failure", r.errors)
	}
	for _, want := range []string{`case "au"`, "metric correctness", "failed", "score 0.200", "threshold 0.60", testkit.CapitalsSydneyReason} {
		if !strings.Contains(r.errors[0], want) {
			t.Errorf("failure %q lacks %q", r.errors[0], want)
		}
	}

	if r := assertOn(path, good); len(r.errors) != 0 {
		t.Fatalf("a passing case reported %q", r.errors)
	}
}

func TestAssertFailsWhenNothingWasVerified(t *testing.T) {
	// No key: the G-Eval metric skips every case. A green test would lie.
	path := config(t, "https://judge.invalid/v1", "ANVILTEST_NO_SUCH_KEY")
	r := assertOn(path, good)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "could not verify") || !strings.Contains(r.errors[0], "ANVILTEST_NO_SUCH_KEY") {
		t.Fatalf("reported %q, want one could-not-verify failure naming the key", r.errors)
	}
}

func TestAssertRefusesDuplicateIDs(t *testing.T) {
	t.Setenv("ANVILTEST_KEY", "test-key")
	srv := testkit.CapitalsJudge(t)
	path := config(t, srv.URL(), "ANVILTEST_KEY")
	r := assertOn(path, good, good)
	if !r.fatal || !strings.Contains(strings.Join(r.errors, "\n"), "duplicate case id") || srv.Calls() != 0 {
		t.Fatalf("reported %q after %d judge calls, want a fatal duplicate-id error before any call", r.errors, srv.Calls())
	}
}

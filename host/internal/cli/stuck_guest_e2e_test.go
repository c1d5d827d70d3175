package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/wasmtest"
)

// stuckGuestConfig writes a run of n cases scored by textcheck's
// exact_match and by a plugin whose measure is a call tree of 2^44 calls
// with no loop (wasmtest.CallTreePlugin), under timeout.
func stuckGuestConfig(t *testing.T, n int, timeout string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	mod := wasmtest.CallTreePlugin(false)
	sum := sha256.Sum256(mod)
	if err := os.WriteFile(filepath.Join(dir, "calltree.wasm"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	var cases bytes.Buffer
	for i := range n {
		fmt.Fprintf(&cases, `{"id":"c%d","input":"q","actual_output":"Paris","expected_output":"Paris"}`+"\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.jsonl"), cases.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`version: 1
dataset: cases.jsonl
plugins:
  textcheck:
    path: %[1]s/textcheck.wasm
    sha256_file: %[1]s/textcheck.wasm.sha256
  calltree:
    path: calltree.wasm
    sha256: sha256:%[2]s
    limits: {timeout: %[3]s, pool_size: 1}
defaults:
  threshold: 0.5
metrics:
  - name: exact
    kind: exact_match
  - name: stuck
    kind: shape
    gate: false
`, wasmDir, hex.EncodeToString(sum[:]), timeout)
	if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// boundedRun is `anvil-host run` on dir's config with args, killed if it
// has not ended within 2 minutes (ctx is then done).
func boundedRun(t *testing.T, dir string, args ...string) (context.Context, *exec.Cmd) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary, append([]string{"run", "-c", "anvil.yaml", "-o", "out", "--no-progress"}, args...)...)
	cmd.Dir, cmd.Env = dir, baseEnv(dir)
	return ctx, cmd
}

// TestStuckGuestDoesNotHoldTheRun: a plugin whose code has no loop at
// all (which wazero's own deadline check never reaches, and which froze
// the whole host when a garbage collection started during it) is stopped
// at its deadline on every case, and the other metric scores every case.
func TestStuckGuestDoesNotHoldTheRun(t *testing.T) {
	dir := stuckGuestConfig(t, 6, "300ms")
	ctx, cmd := boundedRun(t, dir, "--concurrency", "2")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the run did not finish within 2 minutes (a guest held it):\n%s", out)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	n := 0
	if err := results.Each(filepath.Join(dir, "out", "results.jsonl"), func(r *results.CaseResult) error {
		n++
		for _, m := range r.Metrics {
			switch m.Metric {
			case "exact":
				if m.Status != "passed" {
					t.Errorf("case %s: exact is %s, want passed", r.CaseID, m.Status)
				}
			case "stuck":
				if m.Error == nil || m.Error.Code != "timeout" {
					b, _ := json.Marshal(m)
					t.Errorf("case %s: stuck ended %s, want a timeout error", r.CaseID, b)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n != 6 {
		t.Errorf("%d cases in the results, want 6\n%s", n, out)
	}
}

// TestInterruptWhileAGuestIsStuck: SIGINT while a guest runs loop-free
// code far from its deadline ends the run promptly with exit 130.
func TestInterruptWhileAGuestIsStuck(t *testing.T) {
	dir := stuckGuestConfig(t, 4, "10m")
	ctx, cmd := boundedRun(t, dir, "--log-level", "info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The guest logs this through anvil_log just before its call tree.
	started := make(chan struct{})
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), wasmtest.Started) {
				once = true
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the guest never said it started")
	}
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("SIGINT did not end the run within 2 minutes")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d", err, exitInterrupted)
	}
	t.Logf("exit %d %s after SIGINT", ee.ExitCode(), time.Since(sent).Round(time.Millisecond))
}

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
)

// envProject is project's G-Eval without model and base_url in anvil.yaml:
// each process takes them from its environment (ANVIL_JUDGE_MODEL,
// OPENAI_BASE_URL), as `anvil-host init` sets a project up.
func envProject(t *testing.T, n int) string {
	t.Helper()
	dir := project(t, "http://unused.invalid/v1", n, false)
	path := filepath.Join(dir, "anvil.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(strings.Replace(string(b), "    base_url: http://unused.invalid/v1\n", "", 1), "    model: judge-model\n", "", 1)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// environment is a process environment: the test key and the judge's
// model and base URL.
func environment(model, baseURL string) func(string) string {
	vars := map[string]string{"ANVIL_TEST_KEY": "test-key", "ANVIL_JUDGE_MODEL": model, "OPENAI_BASE_URL": baseURL}
	return func(k string) string { return vars[k] }
}

// TestWorkerThatWouldScoreOtherwiseIsRefused: a worker whose environment
// resolves the judge to another model or endpoint, or whose host links a
// G-Eval built from other sources under the same version, refuses the
// run naming the difference, and evaluates none of its cases; a matching
// worker evaluates them all, each results line names it, and summary.json
// names the one judge that answered.
func TestWorkerThatWouldScoreOtherwiseIsRefused(t *testing.T) {
	changedGeval := ownStamp()
	for i, k := range changedGeval.kinds {
		if k.Name == "geval" {
			changedGeval.kinds[i].Digest = "sha256:" + strings.Repeat("e", 64)
		}
	}
	for _, tc := range []struct {
		name     string
		stranger func(judgeURL string) WorkerOptions
		want     string
	}{
		{"another ANVIL_JUDGE_MODEL", func(u string) WorkerOptions {
			return WorkerOptions{Getenv: environment("other", u)}
		}, "judge default model: coordinator gpt-4o-mini, worker other"},
		{"another OPENAI_BASE_URL", func(u string) WorkerOptions {
			return WorkerOptions{Getenv: environment("gpt-4o-mini", "http://127.0.0.1:9/v1")}
		}, "judge default base_url: coordinator http://127.0.0.1:"},
		{"G-Eval built from changed sources", func(u string) WorkerOptions {
			return WorkerOptions{Getenv: environment("gpt-4o-mini", u), stamp: changedGeval}
		}, "built-in kind geval digest: coordinator sha256:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judge := deterministicJudge(t)
			dir := envProject(t, 8)
			ns := startNATS(t, t.TempDir(), -1)
			stranger := tc.stranger(judge.URL())
			stranger.Name = "stranger"
			workers(t, ns.ClientURL(), 1, stranger)
			refused := make(chan FaultMessage, 16)
			type outcome struct {
				s   *results.Summary
				co  *Coordinator
				err error
			}
			done := make(chan outcome, 1)
			out := filepath.Join(dir, "out")
			go func() {
				s, co, err := runCluster(t, dir, out, ns.ClientURL(), CoordinatorOptions{OnFault: func(f FaultMessage) { refused <- f }},
					engine.RunOptions{}, engine.Options{Getenv: environment("gpt-4o-mini", judge.URL())})
				done <- outcome{s, co, err}
			}()
			select {
			case f := <-refused:
				if f.Worker != "stranger0" || f.Kind != FaultRefused || !strings.Contains(f.Reason, tc.want) {
					t.Errorf("refusal %+v; want stranger0 refusing, naming %q", f, tc.want)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("the stranger's refusal never reached the coordinator")
			}
			workers(t, ns.ClientURL(), 1, WorkerOptions{Name: "matching", Getenv: environment("gpt-4o-mini", judge.URL())})
			res := <-done
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.s.Cases != 8 {
				t.Errorf("%d cases, want 8", res.s.Cases)
			}
			for id, w := range resultWorkers(t, out) {
				if w != "matching0" {
					t.Errorf("case %s evaluated by %q, want matching0", id, w)
				}
			}
			id := res.s.Identity
			if id == nil || len(id.Judges) != 1 || id.Judges[0].Model != "gpt-4o-mini" || id.Judges[0].BaseURL != strings.TrimRight(judge.URL(), "/") {
				t.Errorf("summary identity %+v; want the one judge that answered, gpt-4o-mini at the judge", id)
			}
			for _, f := range res.co.Refusals() {
				if f.Worker != "stranger0" {
					t.Errorf("refusal of %s: %s", f.Worker, f.Reason)
				}
			}
		})
	}
}

package cluster

import (
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// TestSharedCacheRerunMakesNoJudgeCalls: the workers share one judge
// cache in JetStream key-value; a rerun of the same run on the cluster is
// answered from it entirely — no judge call, the steps included — and
// scores the same.
func TestSharedCacheRerunMakesNoJudgeCalls(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 24, false)
	nats := startNATS(t, t.TempDir(), -1)
	workers(t, nats.ClientURL(), 3, WorkerOptions{Concurrency: 4})
	rw := engine.Options{Cache: "rw"}
	first, _, err := runCluster(t, dir, filepath.Join(dir, "first"), nats.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, rw)
	if err != nil {
		t.Fatal(err)
	}
	if first.Judge.Calls != 25 || judge.Calls() != 25 {
		t.Fatalf("first run: summary says %d judge calls, the judge saw %d; want 25", first.Judge.Calls, judge.Calls())
	}
	second, _, err := runCluster(t, dir, filepath.Join(dir, "second"), nats.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, rw)
	if err != nil {
		t.Fatal(err)
	}
	if second.Judge.Calls != 0 || judge.Calls() != 25 {
		t.Errorf("rerun: summary says %d judge calls, the judge saw %d more; want 0", second.Judge.Calls, judge.Calls()-25)
	}
	if second.Judge.CacheHits != 25 {
		t.Errorf("rerun: %d cache hits, want 25", second.Judge.CacheHits)
	}
	if a, b := resultScores(t, filepath.Join(dir, "first")), resultScores(t, filepath.Join(dir, "second")); a != b {
		t.Errorf("scores differ between the run and its cached rerun:\n%s\n%s", a, b)
	}
}

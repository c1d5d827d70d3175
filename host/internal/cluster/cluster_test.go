package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// TestClusterRunMatchesLocal: the same project run locally and on a
// cluster of three workers gives the same summary (apart from run id and
// timings), the same results line for line, the same outputs, and the
// same judge calls: the G-Eval steps are generated once, by the
// coordinator, not once per worker.
func TestClusterRunMatchesLocal(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 40, true)
	localOut := filepath.Join(dir, "local")
	runLocal(t, dir, localOut)
	localCalls := judge.Calls()

	nats := startNATS(t, t.TempDir(), -1)
	workers(t, nats.ClientURL(), 3, WorkerOptions{Concurrency: 4})
	clusterOut := filepath.Join(dir, "cluster")
	if _, _, err := runCluster(t, dir, clusterOut, nats.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := judge.Calls() - localCalls; got != localCalls {
		t.Errorf("cluster run made %d judge calls, the local run %d", got, localCalls)
	}
	if want := 40 + 1; localCalls != want {
		t.Errorf("local run made %d judge calls, want %d (one per case and one for the steps)", localCalls, want)
	}
	if l, c := comparableSummary(t, localOut), comparableSummary(t, clusterOut); l != c {
		t.Errorf("summaries differ\nlocal:\n%s\ncluster:\n%s", l, c)
	}
	local, cluster := resultLines(t, localOut), resultLines(t, clusterOut)
	if len(cluster) != 40 {
		t.Errorf("cluster results hold %d cases, want 40", len(cluster))
	}
	for id, line := range local {
		if cluster[id] != line {
			t.Errorf("case %s:\nlocal   %s\ncluster %s", id, line, cluster[id])
		}
	}
	for id, w := range resultWorkers(t, clusterOut) {
		if w != "w0" && w != "w1" && w != "w2" {
			t.Errorf("case %s: results line names worker %q, want the one of w0, w1, w2 that ran it", id, w)
		}
	}
	for id, w := range resultWorkers(t, localOut) {
		if w != "" {
			t.Errorf("case %s of the local run names worker %q", id, w)
		}
	}
	for _, name := range []string{"junit.xml", "report.html", "cases/case-003.json"} {
		if _, err := os.Stat(filepath.Join(clusterOut, name)); err != nil {
			t.Errorf("cluster run did not write %s: %v", name, err)
		}
	}
}

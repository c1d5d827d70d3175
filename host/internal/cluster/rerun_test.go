package cluster

import (
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// TestRerunInTheSameOutputDirectory: a run repeated into the same output
// directory (the same run name in NATS) within JetStream's duplicate
// window completes. Its cases' message ids are the earlier run's, whose
// messages were acknowledged and purged: JetStream took the new ones for
// duplicates and dropped them, and the coordinator waited forever.
func TestRerunInTheSameOutputDirectory(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 3, false)
	ns := startNATS(t, t.TempDir(), -1)
	workers(t, ns.ClientURL(), 1, WorkerOptions{})
	out := filepath.Join(dir, "out")
	for i := range 2 {
		s, _, err := runCluster(t, dir, out, ns.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, engine.Options{})
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if s.Cases != 3 || s.Incomplete != nil {
			t.Fatalf("run %d: %d cases, incomplete %+v; want 3, complete", i+1, s.Cases, s.Incomplete)
		}
	}
}

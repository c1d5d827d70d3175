package cluster

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// TestNATSServerRestartMidRun: the NATS server (file storage) stops while
// cases are being judged and comes back on the same port and store; the
// coordinator and the workers reconnect, and the run completes with
// every case written exactly once.
func TestNATSServerRestartMidRun(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 30, false)
	localOut := filepath.Join(dir, "local")
	runLocal(t, dir, localOut)
	g := newGate()
	judge.On(judgetest.ContainsMessage("Australia? (1"), g.hold(agrees))
	t.Cleanup(g.open)

	store := t.TempDir()
	first := startNATS(t, store, -1)
	port := first.Addr().(*net.TCPAddr).Port
	url := first.ClientURL()
	workers(t, url, 2, WorkerOptions{Concurrency: 3})
	type outcome struct {
		s   *results.Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, _, err := runCluster(t, dir, filepath.Join(dir, "out"), url, CoordinatorOptions{AckWait: 2 * time.Second}, engine.RunOptions{}, engine.Options{})
		done <- outcome{s, err}
	}()
	g.wait(t, 2) // cases 10-19 are being judged
	first.Shutdown()
	first.WaitForShutdown()
	startNATS(t, store, port)
	g.open()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.s.Cases != 30 || res.s.Incomplete != nil {
		t.Fatalf("%d cases, incomplete %+v; want 30, complete", res.s.Cases, res.s.Incomplete)
	}
	local, cluster := resultLines(t, localOut), resultLines(t, filepath.Join(dir, "out"))
	for id, line := range local {
		if cluster[id] != line {
			t.Errorf("case %s differs:\nlocal   %s\ncluster %s", id, line, cluster[id])
		}
	}
}

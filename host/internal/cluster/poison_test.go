package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// TestPoisonCaseIsWrittenAsAnError: a case that kills every worker it is
// delivered to (here: each worker process is SIGKILLed while its judge
// call for case-001 is in flight) is delivered --max-deliver times, then
// written as an error result naming the case, its deliveries and the last
// worker seen — so the run ends, unverified (exit 3 via max_error_rate),
// instead of waiting forever, and every other case is written as locally.
func TestPoisonCaseIsWrittenAsAnError(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 3, false) // no Sydney case: nothing fails its threshold
	localOut := filepath.Join(dir, "local")
	runLocal(t, dir, localOut)
	g := newGate()
	judge.On(judgetest.ContainsMessage("Australia? (1)"), g.hold(agrees))
	t.Cleanup(g.open)

	nats := startNATS(t, t.TempDir(), -1)
	out := filepath.Join(dir, "cluster")
	type outcome struct {
		s   *results.Summary
		err error
	}
	done := make(chan outcome, 1)
	const maxDeliver = 3
	go func() {
		s, _, err := runCluster(t, dir, out, nats.ClientURL(), CoordinatorOptions{AckWait: time.Second, MaxDeliver: maxDeliver}, engine.RunOptions{}, engine.Options{})
		done <- outcome{s, err}
	}()
	var res outcome
	kills := 0
	guard := time.After(3 * time.Minute) // only a broken run reaches it
	for finished := false; !finished; {
		name := fmt.Sprintf("killable-%d", kills+1)
		p := startProcess(t, "worker", "ANVIL_CLUSTER_TEST_URL="+nats.ClientURL(), "ANVIL_CLUSTER_TEST_NAME="+name)
		select {
		case <-g.arrived: // p is inside case-001
			p.kill()
			kills++
			if kills > maxDeliver {
				t.Fatalf("case-001 was delivered a %dth time; --max-deliver is %d", kills, maxDeliver)
			}
		case res = <-done:
			finished = true
		case <-guard:
			t.Fatalf("the run did not end after %d kills: a poison case is waited for forever", kills)
		}
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if kills != maxDeliver || g.count.Load() != maxDeliver {
		t.Errorf("case-001 killed %d workers and reached the judge %d times; want %d each (--max-deliver)", kills, g.count.Load(), maxDeliver)
	}
	s := res.s
	if s.Cases != 3 || s.Incomplete != nil || s.Verdict != results.VerdictUnverified {
		t.Fatalf("summary: %d cases, incomplete %+v, verdict %s; want 3 cases, complete, unverified", s.Cases, s.Incomplete, s.Verdict)
	}
	if len(s.Unverified) != 1 || !strings.Contains(s.Unverified[0], "exceed max_error_rate") {
		t.Errorf("unverified = %q, want the max_error_rate reason", s.Unverified)
	}
	poisoned, err := results.ReadCase(out, "case-001")
	if err != nil {
		t.Fatal(err)
	}
	m := poisoned.Metrics[0]
	want := fmt.Sprintf(`case "case-001": delivered %d times, no worker finished it (last worker seen: killable-%d, delivery %d)`, maxDeliver, maxDeliver, maxDeliver)
	if m.Status != results.StatusError || m.Error == nil || !strings.HasPrefix(m.Error.Message, want) {
		t.Errorf("case-001 = %s %+v, want an error starting %q", m.Status, m.Error, want)
	}
	local, cluster := resultLines(t, localOut), resultLines(t, out)
	for _, id := range []string{"case-000", "case-002"} {
		if cluster[id] != local[id] {
			t.Errorf("case %s differs:\nlocal   %s\ncluster %s", id, local[id], cluster[id])
		}
	}
}

// TestPoisonCaseExhaustedWhileCoordinatorDown: JetStream gives up on a
// case while no coordinator runs (killed with SIGKILL); `run --cluster
// --resume` still learns of it — the advisory is kept in ANVIL_EXHAUSTED —
// and writes it as an error instead of waiting for it forever.
func TestPoisonCaseExhaustedWhileCoordinatorDown(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 3, false)
	g := newGate()
	judge.On(judgetest.ContainsMessage("Australia? (1)"), g.hold(agrees))
	t.Cleanup(g.open)

	nats := startNATS(t, t.TempDir(), -1)
	spy, err := natsgo.Connect(nats.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	advisories, err := spy.SubscribeSync(exhaustedPrefix + ">")
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "cluster")
	url := "ANVIL_CLUSTER_TEST_URL=" + nats.ClientURL()
	coord := startProcess(t, "coordinator", url, "ANVIL_CLUSTER_TEST_DIR="+dir, "ANVIL_CLUSTER_TEST_OUT="+out,
		"ANVIL_CLUSTER_TEST_ACK_WAIT=1s", "ANVIL_CLUSTER_TEST_MAX_DELIVER=1")
	victim := startProcess(t, "worker", url, "ANVIL_CLUSTER_TEST_NAME=killable-1")
	g.wait(t, 1) // the victim is inside case-001, its only delivery
	coord.kill()
	victim.kill()
	// A worker that pulls: the server gives up on case-001 (and says so)
	// and this worker evaluates the rest while no coordinator runs.
	startProcess(t, "worker", url, "ANVIL_CLUSTER_TEST_NAME=killable-2")
	if _, err := advisories.NextMsg(2 * time.Minute); err != nil {
		t.Fatalf("no max-deliveries advisory: %v", err)
	}
	s, _, err := runCluster(t, dir, out, nats.ClientURL(), CoordinatorOptions{AckWait: time.Second, MaxDeliver: 1}, engine.RunOptions{Resume: true}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cases != 3 || s.Incomplete != nil || s.Verdict != results.VerdictUnverified {
		t.Fatalf("summary: %d cases, incomplete %+v, verdict %s; want 3 cases, complete, unverified", s.Cases, s.Incomplete, s.Verdict)
	}
	poisoned, err := results.ReadCase(out, "case-001")
	if err != nil {
		t.Fatal(err)
	}
	want := `case "case-001": delivered 1 times, no worker finished it (no worker reported taking it to this coordinator)`
	if m := poisoned.Metrics[0]; m.Status != results.StatusError || m.Error == nil || !strings.HasPrefix(m.Error.Message, want) {
		t.Errorf("case-001 = %s %+v, want an error starting %q", m.Status, m.Error, want)
	}
	// case-002, in flight on killable-2 when the resumed coordinator
	// published the run again, was handed back without spending its one
	// delivery, and evaluated.
	for _, id := range []string{"case-000", "case-002"} {
		r, err := results.ReadCase(out, id)
		if err != nil {
			t.Fatal(err)
		}
		if m := r.Metrics[0]; m.Status != results.StatusPassed {
			t.Errorf("%s = %s %+v, want passed", id, m.Status, m.Error)
		}
	}
	if lines := resultLines(t, out); len(lines) != 3 {
		t.Errorf("%d cases written, want 3", len(lines))
	}
}

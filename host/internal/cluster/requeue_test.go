package cluster

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// TestForgedResultsCannotBuyEvaluations: a peer that may publish results
// (no NATS permissions in place) sends 200 results for a pending case
// with wrong plugin digests, and 200 that say they are of another run.
// Each refused result used to publish the case again: 400 more
// evaluations, and judge calls, of one case. Now a case is published again
// at most --max-deliver times whatever arrives, a result of another run
// never re-queues this run's case, and the case's result is the real
// worker's.
func TestForgedResultsCannotBuyEvaluations(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 1, false)
	localOut := filepath.Join(dir, "local")
	runLocal(t, dir, localOut)
	g := newGate()
	judge.On(judgetest.ContainsMessage("Australia? (0)"), g.hold(agrees))
	t.Cleanup(g.open)

	ns := startNATS(t, t.TempDir(), -1)
	workers(t, ns.ClientURL(), 1, WorkerOptions{Concurrency: 8})
	out := filepath.Join(dir, "cluster")
	const maxDeliver, forged = 3, 200
	handled := make(chan struct{}, 2*forged+16)
	type outcome struct {
		s   *results.Summary
		co  *Coordinator
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, co, err := runCluster(t, dir, out, ns.ClientURL(), CoordinatorOptions{MaxDeliver: maxDeliver,
			resultHandled: func() { handled <- struct{}{} }}, engine.RunOptions{}, engine.Options{})
		done <- outcome{s, co, err}
	}()
	g.wait(t, 1) // the worker is inside case-000

	runID, err := runName(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rogue, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	js, err := jetstream.New(rogue)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := js.Stream(ctx, casesStream)
	if err != nil {
		t.Fatal(err)
	}
	// Whoever can read the stream has the case as published.
	raw, err := cases.GetLastMsgForSubject(ctx, casesSubject(runID))
	if err != nil {
		t.Fatal(err)
	}
	var cm CaseMessage
	if err := json.Unmarshal(raw.Data, &cm); err != nil {
		t.Fatal(err)
	}
	forge := func(run string) []byte {
		b, _ := json.Marshal(ResultMessage{RunID: run, Worker: "mallory", ABIMajor: abi.Major, ABIMinor: abi.Minor,
			Kinds: ownStamp().kinds, Plugins: map[string]string{"textcheck": "sha256:" + strings.Repeat("0", 64)},
			Result: &results.CaseResult{CaseID: cm.Case.ID, Case: cm.Case}})
		return b
	}
	for i := range 2 * forged {
		run := runID
		if i%2 == 1 {
			run = "0123456789abcdef" // another run's result, on this run's subject
		}
		if _, err := js.Publish(ctx, resultsSubject(runID), forge(run)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 * forged {
		select {
		case <-handled:
		case <-time.After(2 * time.Minute):
			t.Fatal("the coordinator did not read the forged results")
		}
	}
	// Every publication of the case is still in the work queue (the judge
	// holds each evaluation): the original and the re-queued copies.
	info, err := cases.Info(ctx, jetstream.WithSubjectFilter(casesSubject(runID)))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[casesSubject(runID)]; n != 1+maxDeliver {
		t.Errorf("case-000 is on the work queue %d times after %d forged results; want %d (the original and --max-deliver copies)", n, 2*forged, 1+maxDeliver)
	}
	g.open()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if n := g.count.Load(); n > 1+maxDeliver {
		t.Errorf("case-000 reached the judge %d times; want at most %d", n, 1+maxDeliver)
	}
	if n := len(res.co.Refusals()); n != maxDeliver {
		t.Errorf("%d refusals reported; want %d (one per publication bought, the rest logged once)", n, maxDeliver)
	}
	// The verdict is the local run's. Its judge usage may not be: the
	// re-queued copies ran beside the held original, and a copy whose
	// identical judge request joined the original's in flight made no
	// call of its own (usage counts the calls an evaluation made), and a
	// plugin that reports the usage it was given in its details (geval
	// does) shows that copy's zero USD there too.
	local, cluster := withoutUsage(t, resultLines(t, localOut)["case-000"]), withoutUsage(t, resultLines(t, out)["case-000"])
	if cluster != local {
		t.Errorf("case-000:\nlocal   %s\ncluster %s", local, cluster)
	}
}

// withoutUsage is a results line without its metrics' judge usage, in
// the result and in the details a plugin wrote.
func withoutUsage(t *testing.T, line string) string {
	t.Helper()
	var r results.CaseResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	for i := range r.Metrics {
		r.Metrics[i].Usage = results.JudgeUsage{}
		if len(r.Metrics[i].Details) == 0 {
			continue
		}
		var details map[string]json.RawMessage
		if err := json.Unmarshal(r.Metrics[i].Details, &details); err != nil {
			t.Fatalf("%s: details: %v", r.Metrics[i].Metric, err)
		}
		delete(details, "usage")
		r.Metrics[i].Details, _ = json.Marshal(details)
	}
	b, _ := json.Marshal(r)
	return string(b)
}

package cluster

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// TestLostWorkerCaseIsRetriedOnResume: a case whose only worker vanished
// (it took the case and never answered) is written as an error marked
// retryable — a lost worker is the infrastructure's fault — and
// `run --cluster --resume` evaluates it again: published afresh (the
// earlier message is dead in the queue) with the earlier attempt's
// max-deliveries advisory, still in NATS, not taken for the new one's.
func TestLostWorkerCaseIsRetriedOnResume(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 2, false)
	ns := startNATS(t, t.TempDir(), -1)
	out := filepath.Join(dir, "cluster")
	copts := CoordinatorOptions{URL: ns.ClientURL(), Logger: quietLogger(t), AckWait: time.Second, MaxDeliver: 1}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	co, err := NewCoordinator(ctx, copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co.Close)
	eopts := engine.Options{}
	co.EngineOptions(&eopts)
	eng := openEngine(t, dir, eopts)
	written := make(chan int, 4)
	stopped := make(chan error, 1)
	go func() {
		_, err := co.Run(ctx, eng, engine.RunOptions{OutputDir: out, Progress: func(done, _ int) { written <- done }})
		stopped <- err
	}()

	// A worker that takes case-000 and dies: no ack, no progress, no
	// result.
	runID, err := runName(out)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	runs, err := js.KeyValue(ctx, runsBucket)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := runs.Watch(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	for e := range watch.Updates() {
		if e != nil {
			break // the run is published: its consumer exists
		}
	}
	watch.Stop()
	cons, err := js.Consumer(ctx, casesStream, casesConsumer(runID))
	if err != nil {
		t.Fatal(err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Data()), `"case-000"`) {
		t.Fatalf("took %s, want case-000", m.Data())
	}
	// After --ack-wait JetStream gives up on it (--max-deliver 1) and
	// the coordinator writes it; then the run is interrupted, case-001
	// pending.
	select {
	case <-written:
	case <-time.After(2 * time.Minute):
		t.Fatal("the lost case was never written")
	}
	stop()
	<-stopped
	lost, err := results.ReadCase(out, "case-000")
	if err != nil {
		t.Fatal(err)
	}
	if e := lost.Metrics[0].Error; e == nil || !e.Retryable || !strings.Contains(e.Message, "no worker finished it") {
		t.Fatalf("case-000 = %+v, want an error marked retryable", lost.Metrics[0])
	}

	workers(t, ns.ClientURL(), 1, WorkerOptions{})
	s, _, err := runCluster(t, dir, out, ns.ClientURL(), copts, engine.RunOptions{Resume: true}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cases != 2 || s.Incomplete != nil || s.Resume == nil || s.Resume.Retried != 1 {
		t.Fatalf("resumed: %d cases, incomplete %+v, resume %+v; want 2 cases, complete, 1 retried", s.Cases, s.Incomplete, s.Resume)
	}
	for _, id := range []string{"case-000", "case-001"} {
		r, err := results.ReadCase(out, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := r.Metrics[0].Status; st != results.StatusPassed {
			t.Errorf("%s after --resume: %s %+v, want passed", id, st, r.Metrics[0].Error)
		}
	}
	if lines := resultLines(t, out); len(lines) != 2 {
		t.Errorf("%d cases written, want 2", len(lines))
	}
}

// TestTransportFaultDuringACaseIsRetryable: a judge error on a worker is
// the judge's — written as it is, and kept by --resume — unless the
// worker's NATS transport failed while the case ran (here the server
// restarts while the judge holds case-001's reply): then the error is
// marked retryable, naming the fault, and `run --cluster --resume`
// evaluates that case again.
func TestTransportFaultDuringACaseIsRetryable(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 2, false)
	refuse := judgetest.Reply{Status: 400, ErrorMessage: "bad request"}
	judge.On(judgetest.ContainsMessage("Australia? (0)"), refuse)
	g := newGate()
	t.Cleanup(g.open)
	var calls atomic.Int64
	held := g.hold(refuse)
	judge.On(judgetest.ContainsMessage("Australia? (1)"), judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		if calls.Add(1) == 1 {
			return held.ReplyTo(r) // the first attempt: held, then refused
		}
		return agrees
	}))

	store := t.TempDir()
	first := startNATS(t, store, -1)
	port := first.Addr().(*net.TCPAddr).Port
	url := first.ClientURL()
	workers(t, url, 1, WorkerOptions{Concurrency: 1}) // case-000, then case-001
	out := filepath.Join(dir, "cluster")
	type outcome struct {
		s   *results.Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, _, err := runCluster(t, dir, out, url, CoordinatorOptions{}, engine.RunOptions{}, engine.Options{})
		done <- outcome{s, err}
	}()
	g.wait(t, 1) // case-001 is with the judge
	first.Shutdown()
	first.WaitForShutdown()
	startNATS(t, store, port)
	g.open()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.s.Cases != 2 || res.s.Incomplete != nil {
		t.Fatalf("%d cases, incomplete %+v; want 2, complete", res.s.Cases, res.s.Incomplete)
	}
	for id, retryable := range map[string]bool{"case-000": false, "case-001": true} {
		r, err := results.ReadCase(out, id)
		if err != nil {
			t.Fatal(err)
		}
		e := r.Metrics[0].Error
		if e == nil || e.Code != abi.CodeJudge || e.Retryable != retryable {
			t.Fatalf("%s = %+v; want a judge_error, retryable %v", id, r.Metrics[0], retryable)
		}
		if retryable && !strings.Contains(e.Message, "while the cluster's transport failed: disconnected from NATS") {
			t.Errorf("%s: %q does not name the transport fault", id, e.Message)
		}
	}

	// The first worker's watch of the runs takes a while to come back
	// after the server's restart: a second one takes the resumed run.
	workers(t, url, 1, WorkerOptions{Name: "fresh"})
	s, _, err := runCluster(t, dir, out, url, CoordinatorOptions{}, engine.RunOptions{Resume: true}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Resume == nil || s.Resume.Retried != 1 || s.Resume.Done != 1 || s.Cases != 2 {
		t.Fatalf("resume report %+v, %d cases; want 1 retried, 1 done, 2 cases", s.Resume, s.Cases)
	}
	for id, want := range map[string]string{"case-000": results.StatusError, "case-001": results.StatusPassed} {
		r, err := results.ReadCase(out, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := r.Metrics[0].Status; st != want {
			t.Errorf("%s after --resume: %s, want %s", id, st, want)
		}
	}
}

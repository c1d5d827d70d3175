package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// gate holds the judge's replies to matching requests until opened, and
// says when one arrived: the tests kill a process while it is provably
// in the middle of a case.
type gate struct {
	arrived chan struct{}
	opened  chan struct{}
	once    sync.Once
	count   atomic.Int64
}

func newGate() *gate { return &gate{arrived: make(chan struct{}, 1024), opened: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.opened) }) }

// hold answers like deterministicJudge's default after the gate opens.
func (g *gate) hold(reply judgetest.Reply) judgetest.Replier {
	return judgetest.ReplyFunc(func(judgetest.RecordedRequest) judgetest.Reply {
		g.count.Add(1)
		select {
		case g.arrived <- struct{}{}:
		default:
		}
		<-g.opened
		return reply
	})
}

// wait blocks until n matching requests arrived (or fails after a long
// guard, which only a broken test reaches).
func (g *gate) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.arrived:
		case <-time.After(2 * time.Minute):
			t.Fatal("the judge never saw the request")
		}
	}
}

// agrees is the G-Eval judge's reply to a prompt without Sydney.
var agrees = enginetest.Agrees()

// TestWorkerKilledMidCaseIsRedelivered: a worker process killed with
// SIGKILL while its judge call for a case is in flight loses nothing — the
// case is delivered again after the ack deadline, evaluated by another
// worker, and written exactly once.
func TestWorkerKilledMidCaseIsRedelivered(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 20, false)
	localOut := filepath.Join(dir, "local")
	runLocal(t, dir, localOut)
	// The first matching rule answers: this one is added after the local run.
	g := newGate()
	judge.On(judgetest.ContainsMessage("Australia? (5)"), g.hold(agrees))
	t.Cleanup(g.open)

	nats := startNATS(t, t.TempDir(), -1)
	victim := startProcess(t, "worker", "ANVIL_CLUSTER_TEST_URL="+nats.ClientURL())
	out := filepath.Join(dir, "cluster")
	type outcome struct {
		s   *results.Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, _, err := runCluster(t, dir, out, nats.ClientURL(), CoordinatorOptions{AckWait: time.Second}, engine.RunOptions{}, engine.Options{})
		done <- outcome{s, err}
	}()
	g.wait(t, 1) // the victim is inside case-005
	victim.kill()
	g.open()
	workers(t, nats.ClientURL(), 2, WorkerOptions{Concurrency: 4})
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.s.Incomplete != nil || res.s.Cases != 20 {
		t.Fatalf("summary: %d cases, incomplete %+v", res.s.Cases, res.s.Incomplete)
	}
	if n := g.count.Load(); n < 2 {
		t.Errorf("case-005 reached the judge %d times; want at least 2 (the killed worker's call, then the redelivery)", n)
	}
	local, cluster := resultLines(t, localOut), resultLines(t, out) // resultLines fails on a case written twice
	if len(cluster) != 20 {
		t.Errorf("%d cases written, want 20", len(cluster))
	}
	for id, line := range local {
		if cluster[id] != line {
			t.Errorf("case %s differs:\nlocal   %s\ncluster %s", id, line, cluster[id])
		}
	}
	if l, c := comparableSummary(t, localOut), comparableSummary(t, out); l != c {
		t.Errorf("summaries differ\nlocal:\n%s\ncluster:\n%s", l, c)
	}
}

// TestCoordinatorKilledThenResumed: a coordinator process killed with
// SIGKILL mid-run leaves the run in NATS; `run --cluster --resume` picks
// up the results the workers published meanwhile, evaluates the rest and
// writes every case exactly once.
func TestCoordinatorKilledThenResumed(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	judge := deterministicJudge(t)
	g := newGate()
	dir := project(t, judge.URL(), 30, false)
	localOut := filepath.Join(dir, "local")
	runLocal(t, dir, localOut)
	// From now on every scoring reply waits for the gate.
	judge.On(judgetest.ContainsMessage("Australia? (2"), g.hold(agrees))
	t.Cleanup(g.open)

	nats := startNATS(t, t.TempDir(), -1)
	workers(t, nats.ClientURL(), 2, WorkerOptions{Concurrency: 2})
	out := filepath.Join(dir, "cluster")
	coord := startProcess(t, "coordinator", "ANVIL_CLUSTER_TEST_URL="+nats.ClientURL(),
		"ANVIL_CLUSTER_TEST_DIR="+dir, "ANVIL_CLUSTER_TEST_OUT="+out)
	g.wait(t, 2) // cases 20-29 are being judged: the run is under way
	coord.kill()
	g.open()
	s, _, err := runCluster(t, dir, out, nats.ClientURL(), CoordinatorOptions{}, engine.RunOptions{Resume: true}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Incomplete != nil || s.Cases != 30 {
		t.Fatalf("summary: %d cases, incomplete %+v", s.Cases, s.Incomplete)
	}
	local, cluster := resultLines(t, localOut), resultLines(t, out)
	for id, line := range local {
		if cluster[id] != line {
			t.Errorf("case %s differs:\nlocal   %s\ncluster %s", id, line, cluster[id])
		}
	}
	if len(cluster) != 30 {
		t.Errorf("%d cases written, want 30", len(cluster))
	}
	// Results the first coordinator never read, written by the resumed
	// one, name their worker too.
	for id, w := range resultWorkers(t, out) {
		if w != "w0" && w != "w1" {
			t.Errorf("case %s: results line names worker %q, want w0 or w1", id, w)
		}
	}
}

// TestMismatchedWorkerIsRefused: a worker of another ABI version refuses
// the run and says so; the coordinator reports it, and the run is
// evaluated by the worker that matches.
func TestMismatchedWorkerIsRefused(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 10, false)
	nats := startNATS(t, t.TempDir(), -1)
	other := ownStamp()
	other.abiMinor++
	workers(t, nats.ClientURL(), 1, WorkerOptions{Name: "stranger", stamp: other})
	refused := make(chan FaultMessage, 4)
	type outcome struct {
		s   *results.Summary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, _, err := runCluster(t, dir, filepath.Join(dir, "out"), nats.ClientURL(),
			CoordinatorOptions{OnFault: func(f FaultMessage) { refused <- f }}, engine.RunOptions{}, engine.Options{})
		done <- outcome{s, err}
	}()
	var f FaultMessage
	select {
	case f = <-refused:
	case <-time.After(2 * time.Minute):
		t.Fatal("the mismatched worker's refusal never reached the coordinator")
	}
	if f.Worker != "stranger0" || f.Kind != FaultRefused || !strings.Contains(f.Reason, fmt.Sprintf("ABI %d.%d, this worker %d.%d", abi.Major, abi.Minor, abi.Major, abi.Minor+1)) {
		t.Errorf("refusal = %+v", f)
	}
	workers(t, nats.ClientURL(), 1, WorkerOptions{Name: "matching"})
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.s.Cases != 10 {
		t.Errorf("%d cases, want 10", res.s.Cases)
	}
}

// TestCoordinatorRefusesForeignResults: a result is written only when its
// worker's stamp and the result itself match the run — checked against
// the coordinator's own configuration, not the worker's word.
func TestCoordinatorRefusesForeignResults(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 1, true)
	eng := openEngine(t, dir, engine.Options{})
	co := &Coordinator{eng: eng, runID: "0123456789abcdef", log: quietLogger(t)}
	co.desc = RunDescription{Identity: eng.Identity(), Plugins: eng.PluginDigests()}
	good := func() *ResultMessage {
		c := eng.Evaluate(context.Background(), mustCase(t))
		return &ResultMessage{RunID: co.runID, Worker: "w", ABIMajor: abi.Major, ABIMinor: abi.Minor, Kinds: eng.Identity().Kinds,
			ConfigHash: eng.ConfigHash(), Plugins: eng.PluginDigests(), Result: c}
	}
	if err := co.checkResult(good()); err != nil {
		t.Fatalf("a good result was refused: %v", err)
	}
	tests := []struct {
		name   string
		tamper func(*ResultMessage)
		want   string
	}{
		{"other run", func(m *ResultMessage) { m.RunID = "fedcba9876543210" }, "run"},
		{"bad worker name", func(m *ResultMessage) { m.Worker = "../x" }, "not a worker name"},
		{"other ABI", func(m *ResultMessage) { m.ABIMinor = 9 }, "ABI 1.9"},
		{"built-in kind of other source", func(m *ResultMessage) {
			m.Kinds = slices.Clone(m.Kinds)
			// By name, not position: the list is sorted, and more kinds than dag sort before it.
			i := slices.IndexFunc(m.Kinds, func(k identity.Kind) bool { return k.Name == "dag" })
			m.Kinds[i].Digest = "sha256:" + strings.Repeat("0", 64)
		}, "built-in kinds of other source: built-in kind dag digest: run sha256:"},
		{"other judge identity", func(m *ResultMessage) { m.Result.Identity = "0123456789abcdef" }, "identity"},
		{"other plugin digest", func(m *ResultMessage) {
			m.Plugins = map[string]string{"textcheck": "sha256:" + strings.Repeat("0", 64)}
		}, "loaded plugins"},
		{"other config hash", func(m *ResultMessage) { m.Result.ConfigHash = "00000000" }, "config hash"},
		{"metric missing", func(m *ResultMessage) { m.Result.Metrics = m.Result.Metrics[:1] }, "metric results"},
		{"threshold changed", func(m *ResultMessage) { m.Result.Metrics[0].Threshold = 0 }, "threshold"},
		{"verdict forged", func(m *ResultMessage) {
			low := 0.1
			m.Result.Metrics[0].Score, m.Result.Metrics[0].Status = &low, results.StatusPassed
		}, "says passed for score 0.1"},
		{"score out of range", func(m *ResultMessage) {
			big := 7.0
			m.Result.Metrics[0].Score = &big
		}, "without a score in [0,1]"},
		{"unknown status", func(m *ResultMessage) { m.Result.Metrics[1].Status = "great" }, `status "great"`},
		{"no case", func(m *ResultMessage) { m.Result.Case = nil }, "does not carry the case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := good()
			tt.tamper(m)
			err := co.checkResult(m)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkResult = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestJudgeDownOnAWorkerStopsTheRun: a judge that refuses the workers'
// key (HTTP 401 on every scoring call) opens the worker's breaker; the
// worker hands its case back and reports it, and the run stops
// incomplete naming the cause — as a local run stops — with the cases
// already written kept, and the summary telling how to resume.
func TestJudgeDownOnAWorkerStopsTheRun(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 20, false)
	judge.On(judgetest.ContainsMessage("Australia?"), judgetest.Reply{Status: 401, Content: "invalid api key"})
	nats := startNATS(t, t.TempDir(), -1)
	workers(t, nats.ClientURL(), 1, WorkerOptions{Concurrency: 1})
	s, _, err := runCluster(t, dir, filepath.Join(dir, "out"), nats.ClientURL(), CoordinatorOptions{}, engine.RunOptions{}, engine.Options{})
	var re *engine.RunError
	if !errors.As(err, &re) || re.Kind != engine.ErrUnverifiable {
		t.Fatalf("err = %v, want an unverifiable RunError", err)
	}
	if !strings.Contains(err.Error(), "worker w0") || !strings.Contains(err.Error(), "401") {
		t.Errorf("err = %v, want it to name the worker and the judge's 401", err)
	}
	if s == nil || s.Incomplete == nil || !strings.Contains(s.Incomplete.Resume, "--resume --cluster nats://127.0.0.1:") {
		t.Fatalf("summary = %+v, want incomplete with a resume command", s)
	}
}

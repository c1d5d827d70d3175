package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/results"
)

// warnings is a slog handler that hands each warning to a channel.
type warnings chan string

func (w warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w warnings) Handle(_ context.Context, r slog.Record) error {
	select {
	case w <- r.Message:
	default:
	}
	return nil
}
func (w warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w warnings) WithGroup(string) slog.Handler      { return w }

// next is the next warning that starts with prefix.
func (w warnings) next(t *testing.T, prefix string) string {
	t.Helper()
	for {
		select {
		case m := <-w:
			if strings.HasPrefix(m, prefix) {
				return m
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("no warning starting %q", prefix)
		}
	}
}

// TestCoordinatorSaysWhenNothingProgresses: a coordinator that writes no
// case for --stall-after while cases are pending says so, and what it
// knows — the cases pending, the work queue, that no worker ever took a
// case — then again every --stall-after, naming the workers it saw, the
// last result it refused and the last NATS fault. The clock and the
// watchdog's ticks are the test's.
func TestCoordinatorSaysWhenNothingProgresses(t *testing.T) {
	judge := deterministicJudge(t)
	dir := project(t, judge.URL(), 2, false)
	ns := startNATS(t, t.TempDir(), -1)
	out := filepath.Join(dir, "cluster")
	runID, err := runName(out)
	if err != nil {
		t.Fatal(err)
	}
	spy, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	published, err := spy.SubscribeSync(casesSubject(runID))
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}

	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var now atomic.Pointer[time.Time]
	at := func(d time.Duration) { t := start.Add(d); now.Store(&t) }
	at(0)
	ticks := make(chan time.Time)
	logged := make(warnings, 64)
	handled := make(chan struct{}, 8)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	co, err := NewCoordinator(ctx, CoordinatorOptions{URL: ns.ClientURL(), Logger: slog.New(logged), StallAfter: time.Minute,
		clock: func() time.Time { return *now.Load() }, ticks: ticks, resultHandled: func() { handled <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co.Close)
	eopts := engine.Options{}
	co.EngineOptions(&eopts)
	eng := openEngine(t, dir, eopts)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_, _ = co.Run(ctx, eng, engine.RunOptions{OutputDir: out})
	}()
	var first CaseMessage
	for i := range 2 {
		m, err := published.NextMsg(time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := json.Unmarshal(m.Data, &first); err != nil {
				t.Fatal(err)
			}
		}
	}

	at(61 * time.Second)
	ticks <- *now.Load()
	got := logged.next(t, "cluster: no case written")
	for _, want := range []string{
		"no case written for 1m1s; 2 pending",
		"(work queue: 2 waiting, 0 in flight",
		"no worker has taken a case of this run: is an `anvil-host worker --cluster URL` running",
		"no NATS fault seen",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("first notice %q\nlacks %q", got, want)
		}
	}

	// A worker of another build answers (its result is refused), and the
	// transport fails.
	b, _ := json.Marshal(ResultMessage{RunID: runID, Worker: "w7", ABIMajor: abi.Major, ABIMinor: abi.Minor + 1,
		Kinds: ownStamp().kinds, Plugins: map[string]string{}, Result: &results.CaseResult{CaseID: first.Case.ID, Case: first.Case}})
	if err := spy.Publish(resultsSubject(runID), b); err != nil {
		t.Fatal(err)
	}
	select {
	case <-handled:
	case <-time.After(2 * time.Minute):
		t.Fatal("the coordinator did not read the result")
	}
	co.c.health.fault("publish case", errors.New("nats: timeout"))
	at(2*time.Minute + time.Second)
	ticks <- *now.Load()
	got = logged.next(t, "cluster: no case written")
	for _, want := range []string{
		"no case written for 2m1s; 2 pending",
		"workers seen (latest first): w7 ",
		"last result refused: worker w7: worker w7 speaks ABI",
		"last NATS fault ",
		" ago: publish case: nats: timeout",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("second notice %q\nlacks %q", got, want)
		}
	}
	stop()
	<-stopped
}

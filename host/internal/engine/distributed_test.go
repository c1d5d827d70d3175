package engine_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/internal/results"
)

func openEngine(t *testing.T, dir string) *engine.Engine {
	t.Helper()
	cfg, err := config.Load(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(context.Background(), cfg, engine.Options{
		Cache: "off", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	return eng
}

// TestPrepareOnceAdoptEverywhere: the once-per-run work done by Prepare is
// not done again by Run, and an engine that adopts it (a cluster worker)
// never asks the judge for steps; what it scores is the same.
func TestPrepareOnceAdoptEverywhere(t *testing.T) {
	judge := fakeJudge(t)
	env := newEnv(t, configFor(judge.URL(), true, correctness))
	coordinator := openEngine(t, env.dir)
	prepared := coordinator.Prepare(context.Background())
	if len(prepared) != 1 || prepared[0].Metric != "correctness" || len(prepared[0].State) == 0 || judge.Calls() != 1 {
		t.Fatalf("Prepare = %+v after %d judge calls; want correctness's steps after 1", prepared, judge.Calls())
	}
	s, err := coordinator.Run(context.Background(), engine.RunOptions{OutputDir: filepath.Join(env.dir, "a")})
	if err != nil {
		t.Fatal(err)
	}
	// Three of the four cases have an expected_output to score.
	if judge.Calls() != 1+3 || len(s.Prepare) != 1 {
		t.Errorf("Run after Prepare: %d judge calls, %d prepare entries; want 4 (no second steps call) and 1", judge.Calls(), len(s.Prepare))
	}

	worker := openEngine(t, env.dir)
	if err := worker.AdoptPrepared(prepared); err != nil {
		t.Fatal(err)
	}
	before := judge.Calls()
	r := worker.Evaluate(context.Background(), mustCase())
	if judge.Calls()-before != 1 {
		t.Errorf("a worker's case made %d judge calls; want 1 (scoring only)", judge.Calls()-before)
	}
	if err := coordinator.CheckResult(r); err != nil {
		t.Errorf("the coordinator refuses a worker's honest result: %v", err)
	}
	if err := worker.AdoptPrepared([]engine.PreparedMetric{{Metric: "nope"}}); err == nil || !strings.Contains(err.Error(), `metric "nope"`) {
		t.Errorf("AdoptPrepared of an unknown metric: %v", err)
	}
}

func mustCase() *abi.TestCase {
	return &abi.TestCase{ID: "w1", Input: "Capital of France?", ActualOutput: "Paris.", ExpectedOutput: "Paris"}
}

// TestUnevaluatedIsAnErrorOnEveryMetric: a case no worker could finish
// is an error on each metric, naming why, which the engine's own check
// accepts — so it is written and counted like any error.
func TestUnevaluatedIsAnErrorOnEveryMetric(t *testing.T) {
	judge := fakeJudge(t)
	env := newEnv(t, configFor(judge.URL(), true, correctness))
	eng := openEngine(t, env.dir)
	r := eng.Unevaluated(mustCase(), "delivered 5 times, no worker finished it")
	if err := eng.CheckResult(r); err != nil {
		t.Fatalf("CheckResult refuses an unevaluated case: %v", err)
	}
	if len(r.Metrics) != 1 {
		t.Fatalf("%d metric results, want 1", len(r.Metrics))
	}
	m := r.Metrics[0]
	if m.Status != results.StatusError || m.Score != nil || m.Error == nil || m.Error.Message != "delivered 5 times, no worker finished it" || m.ErrorClass != "metric" {
		t.Errorf("metric result = %+v", m)
	}
	if judge.Calls() != 0 {
		t.Errorf("%d judge calls, want 0", judge.Calls())
	}
}

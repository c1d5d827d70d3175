package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// fakeJudge is a G-Eval judge: Sydney scores 2 (0.21), anything else 8
// (0.79).
func fakeJudge(t *testing.T) *judgetest.Server { return enginetest.GEvalJudge(t) }

const cases = `{"id": "c1", "input": "Capital of France?", "actual_output": "Paris.", "expected_output": "Paris"}
{"id": "c2", "input": "Capital of Australia?", "actual_output": "Sydney.", "expected_output": "Canberra"}
{"id": "c3", "input": "sqrt(144)?", "actual_output": "12", "expected_output": "12"}
{"id": "c4", "input": "Largest planet?", "actual_output": "Jupiter."}
`

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func configFor(url string, logprobs bool, metrics string) string {
	return fmt.Sprintf(`version: 1
dataset: cases.jsonl
judges:
  default:
    base_url: %s
    model: judge-model
    api_key_env: ANVIL_TEST_KEY
    supports_logprobs: %v
    supports_json_schema: true
    price: {input_per_million: 1, output_per_million: 2}
defaults:
  judge: default
metrics:
%s`, url, logprobs, metrics)
}

const correctness = `  - name: correctness
    kind: geval
    threshold: 0.5
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
`

type env struct {
	dir   string
	store string
	out   string
}

func newEnv(t *testing.T, cfg string) env {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"anvil.yaml": cfg, "cases.jsonl": cases})
	return env{dir: dir, store: filepath.Join(dir, "store.db"), out: filepath.Join(dir, "out")}
}

func (e env) run(t *testing.T, cache string, ro engine.RunOptions) *results.Summary {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{
		Cache: cache, StorePath: e.store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv,
	}
	// Only the samples' own progress decides what they send together.
	engine.WithSampleWindow(&opts, time.Hour)
	eng, err := engine.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	if ro.OutputDir == "" {
		ro.OutputDir = e.out
	}
	s, err := eng.Run(context.Background(), ro)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readResults(t *testing.T, dir string) map[string]results.CaseResult {
	return enginetest.ResultsByCase(t, filepath.Join(dir, "results.jsonl"))
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestGEvalStepsOncePerRunAndCachedAcrossRuns(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness))

	s := e.run(t, "rw", engine.RunOptions{Concurrency: 4})
	// c4 has no expected_output: skipped, no call. 3 scored + 1 steps call.
	if got := srv.Calls(); got != 4 {
		t.Fatalf("cold run made %d judge calls, want 4 (1 steps + 3 scores)", got)
	}
	m := s.Metrics[0]
	if m.N != 4 || m.Scored != 3 || m.Skipped != 1 || m.Passed != 2 || m.Failed != 1 {
		t.Fatalf("summary = %+v", m)
	}
	if m.ScoreModes["weighted"] != 3 {
		t.Fatalf("score modes = %v, want 3 weighted", m.ScoreModes)
	}
	res := readResults(t, e.out)
	if got := *res["c1"].Metrics[0].Score; !near(got, 0.79) {
		t.Errorf("c1 score = %v, want 0.79 (weighted 7.9 of 10)", got)
	}
	if res["c1"].Metrics[0].LatencyMS <= 0 {
		t.Errorf("c1 latency_ms = %v, want the measured time", res["c1"].Metrics[0].LatencyMS)
	}
	if got := *res["c2"].Metrics[0].Score; !near(got, 0.21) {
		t.Errorf("c2 score = %v, want 0.21 (weighted 2.1 of 10)", got)
	}
	if r := res["c4"].Metrics[0]; r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "expected_output") {
		t.Errorf("c4 = %+v, want skipped naming expected_output", r)
	}
	if len(s.Prepare) != 1 || !strings.Contains(string(s.Prepare[0].Details), `"steps_source":"generated"`) {
		t.Errorf("prepare = %+v, want steps generated", s.Prepare)
	}

	// A rerun: the steps and every score come from the cache.
	before := srv.Calls()
	s2 := e.run(t, "rw", engine.RunOptions{})
	if got := srv.Calls() - before; got != 0 {
		t.Fatalf("warm rerun made %d calls, want 0", got)
	}
	if !strings.Contains(string(s2.Prepare[0].Details), `"steps_source":"cache"`) {
		t.Errorf("rerun prepare = %s, want steps from cache", s2.Prepare[0].Details)
	}
	if *s2.Metrics[0].Mean != *m.Mean {
		t.Errorf("rerun mean %v != %v", *s2.Metrics[0].Mean, *m.Mean)
	}

	// Cache off: steps once, then one call per scored case.
	before = srv.Calls()
	e.run(t, "off", engine.RunOptions{OutputDir: filepath.Join(e.dir, "off")})
	if got := srv.Calls() - before; got != 4 {
		t.Fatalf("cache-off run made %d calls, want 4", got)
	}
}

func TestRerunOfNewCasesMakesOneCallPerCase(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	e.run(t, "rw", engine.RunOptions{Limit: 1})
	if srv.Calls() != 2 {
		t.Fatalf("first run: %d calls, want 2", srv.Calls())
	}
	// Steps are cached: the two new scorable cases cost one call each.
	before := srv.Calls()
	e.run(t, "rw", engine.RunOptions{})
	if got := srv.Calls() - before; got != 2 {
		t.Fatalf("second run: %d calls, want 2 (N scoring calls, steps cached)", got)
	}
}

func TestRawModeIsReportedWhenJudgeHasNoLogprobs(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), false, correctness))
	s := e.run(t, "off", engine.RunOptions{})
	if s.Metrics[0].ScoreModes["raw"] != 3 || s.Metrics[0].ScoreModes["weighted"] != 0 {
		t.Fatalf("score modes = %v, want 3 raw", s.Metrics[0].ScoreModes)
	}
	res := readResults(t, e.out)
	r := res["c1"].Metrics[0]
	if !near(*r.Score, 0.8) || r.ScoreMode != "raw" {
		t.Fatalf("c1 = score %v mode %s, want 0.8 raw", *r.Score, r.ScoreMode)
	}
	if !strings.Contains(string(r.Details), "no logprobs") {
		t.Errorf("details do not say why the score is raw: %s", r.Details)
	}
	for _, req := range srv.Requests() {
		if req.Logprobs {
			t.Fatalf("asked a judge without logprobs for logprobs")
		}
	}
}

func TestReplayOnlyMissIsAnErrorAndOtherCasesSurvive(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	e.run(t, "rw", engine.RunOptions{Limit: 1}) // records steps + c1
	srv.Close()
	s := e.run(t, "replay", engine.RunOptions{})
	m := s.Metrics[0]
	if m.Passed != 1 || m.Errors != 2 || m.ErrorKinds["cache_miss"] != 2 {
		t.Fatalf("replay summary = %+v, want c1 passed from the cache and 2 cache_miss errors", m)
	}
	if s.JudgeErrors != 2 {
		t.Fatalf("judge errors = %d, want 2 (counted apart from failures)", s.JudgeErrors)
	}
}

func TestJudgeFaultIsRecordedOnTheCaseAndTheRunGoesOn(t *testing.T) {
	srv := fakeJudge(t)
	srv.On(judgetest.ContainsMessage("sqrt"), judgetest.Reply{Status: 400, ErrorMessage: "bad request"})
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	s := e.run(t, "off", engine.RunOptions{})
	res := readResults(t, e.out)
	r := res["c3"].Metrics[0]
	if r.Status != results.StatusError || r.ErrorClass != "judge" || r.Error == nil || r.Error.Code != "judge_error" {
		t.Fatalf("c3 = %+v, want a judge_error", r)
	}
	if res["c1"].Metrics[0].Status != results.StatusPassed {
		t.Fatalf("c1 = %+v, want passed despite c3's fault", res["c1"].Metrics[0])
	}
	if s.JudgeErrors != 1 || s.Metrics[0].Failed != 1 {
		t.Fatalf("summary: judge errors %d failed %d", s.JudgeErrors, s.Metrics[0].Failed)
	}
}

func TestNoJudgeKeySkipsLLMMetricsWithAMessage(t *testing.T) {
	cfg := `version: 1
dataset: cases.jsonl
judges:
  default: {model: m, api_key_env: ANVIL_NO_SUCH_KEY, base_url: "https://judge.invalid/v1"}
metrics:
` + correctness
	e := newEnv(t, cfg)
	s := e.run(t, "off", engine.RunOptions{})
	m := s.Metrics[0]
	if m.Skipped != 4 || m.Judge.Calls != 0 {
		t.Fatalf("summary = %+v, want every case skipped", m)
	}
	r := readResults(t, e.out)["c1"].Metrics[0]
	if !strings.Contains(r.Reason, "ANVIL_NO_SUCH_KEY") {
		t.Fatalf("reason %q does not say how to configure the judge", r.Reason)
	}
}

func TestDuplicateMetricNamesGetDeterministicKeys(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness+correctness))
	s := e.run(t, "rw", engine.RunOptions{})
	if len(s.Metrics) != 2 || s.Metrics[0].Metric != "correctness#1" || s.Metrics[1].Metric != "correctness#2" {
		t.Fatalf("metric keys = %q, %q", s.Metrics[0].Metric, s.Metrics[1].Metric)
	}
}

func TestEstimateCountsCachedStepsAsFree(t *testing.T) {
	srv := fakeJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	load := func() *engine.Engine {
		cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(context.Background(), cfg, engine.Options{StorePath: e.store,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close(context.Background()) })
		return eng
	}
	rep, err := load().Estimate(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Calls() != 0 {
		t.Fatalf("estimate called the judge %d times", srv.Calls())
	}
	m := rep.Metrics[0]
	if m.JudgeCalls != 4 || m.CachedCalls != 0 || m.InputTokens == 0 || m.USD <= 0 {
		t.Fatalf("cold estimate = %+v, want 4 calls (1 steps + 3 scores) with tokens and USD", m)
	}
	e.run(t, "rw", engine.RunOptions{Limit: 1})
	rep, err = load().Estimate(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	m = rep.Metrics[0]
	if m.JudgeCalls != 2 || m.CachedCalls != 2 {
		t.Fatalf("warm estimate = %+v, want 2 uncached (c2, c3) and 2 cached (steps, c1)", m)
	}
}

func loadErr(t *testing.T, e env) error {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		return err
	}
	eng, err := engine.New(context.Background(), cfg, engine.Options{Cache: "off",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "k" }})
	if err == nil {
		eng.Close(context.Background())
	}
	return err
}

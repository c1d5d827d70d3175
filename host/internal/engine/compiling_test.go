package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
	"github.com/agentanvil/anvil/sdk"
)

// buildTextcheck builds the textcheck example plugin from source into a
// fresh directory and returns its path and sha256.
func buildTextcheck(t testing.TB) (path, digest string) {
	return buildWasm(t, "textcheck", "../../../examples/plugins/textcheck/wasm")
}

// buildWasm builds the Go plugin at src as scripts/build-plugins does,
// as name.wasm in a fresh directory, and returns its path and sha256 in
// hex.
func buildWasm(t testing.TB, name, src string) (path, digest string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name+".wasm")
	digest, err := testkit.BuildGuest(t.Context(), src, path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.TrimPrefix(digest, "sha256:")
}

// compileGate holds every Wasm compile until released, or refuses it.
type compileGate struct {
	release chan struct{}
	once    sync.Once
	refuse  error // returned instead of letting the compile go on
}

func newCompileGate(t *testing.T) *compileGate {
	g := &compileGate{release: make(chan struct{})}
	t.Cleanup(g.open) // a failed test must not leave a compile held
	return g
}

func (g *compileGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *compileGate) hold(ctx context.Context, _ string) error {
	select {
	case <-g.release:
		return g.refuse
	case <-ctx.Done():
		return ctx.Err()
	}
}

// firstRequest is a G-Eval-speaking fake judge that closes seen when its
// first request arrives.
func firstRequest(t *testing.T) (*judgetest.Server, <-chan struct{}) {
	seen := make(chan struct{})
	var once sync.Once
	steps := judgetest.Reply{Content: `{"steps": ["Compare the facts.", "Penalise contradictions."]}`}
	score := judgetest.JSONScoreReply("Agrees.", "8", map[string]float64{"8": .7, "7": .2, "9": .1})
	s := judgetest.New(t, judgetest.WithDefault(judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		once.Do(func() { close(seen) })
		for _, m := range r.Messages {
			if strings.Contains(m.Content, `"steps"`) {
				return steps
			}
		}
		return score
	})))
	return s, seen
}

const compileCases = `{"id": "same", "input": "q1", "actual_output": "Paris", "expected_output": "paris"}
{"id": "other", "input": "q2", "actual_output": "Sydney", "expected_output": "Canberra"}
`

// compileEnv writes a config with a judge-only metric (G-Eval, criteria
// only: its steps are one judge call before the first case) and a metric
// of the textcheck Wasm plugin with the given params.
func compileEnv(t testing.TB, judgeURL, exactParams string) (*config.Config, engine.Options, string) {
	t.Helper()
	wasm, digest := buildTextcheck(t)
	dir := t.TempDir()
	yaml := configFor(judgeURL, true, correctness+`  - name: exact
    kind: exact_match
    gate: false
    params: `+exactParams+`
`) + fmt.Sprintf("plugins:\n  textcheck: {path: %s, sha256: %s}\n", wasm, digest)
	writeFiles(t, dir, map[string]string{"anvil.yaml": yaml, "cases.jsonl": compileCases})
	cfg, err := config.Load(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{Cache: "off", CompileCacheDir: t.TempDir(), CompileInBackground: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv}
	return cfg, opts, filepath.Join(dir, "out")
}

type runOutcome struct {
	s   *results.Summary
	err error
}

// startRun loads and runs the engine in the background.
func startRun(cfg *config.Config, opts engine.Options, out string) <-chan runOutcome {
	done := make(chan runOutcome, 1)
	go func() {
		ctx := context.Background()
		eng, err := engine.New(ctx, cfg, opts)
		if err != nil {
			done <- runOutcome{err: err}
			return
		}
		defer eng.Close(ctx)
		s, err := eng.Run(ctx, engine.RunOptions{OutputDir: out})
		done <- runOutcome{s, err}
	}()
	return done
}

// stuck bounds how long a test waits for what must happen; it is a
// failure detector, never a synchronisation.
const stuck = 3 * time.Minute

// TestJudgeOnlyMetricJudgesWhileAPluginCompiles: with the Wasm plugin's
// (cold) compile held back, the G-Eval metric's first judge request reaches
// the judge; once the compile is let go, both metrics score every case.
// Loading every plugin before resolving any metric (as New did) never
// sends that request while the compile is held.
func TestJudgeOnlyMetricJudgesWhileAPluginCompiles(t *testing.T) {
	judge, seen := firstRequest(t)
	cfg, opts, out := compileEnv(t, judge.URL(), "{ignore_case: true}")
	gate := newCompileGate(t)
	engine.WithCompileGate(&opts, gate.hold)

	done := startRun(cfg, opts, out)
	select {
	case <-seen:
	case r := <-done:
		t.Fatalf("the run ended before any judge request while the compile was held: %v", r.err)
	case <-time.After(stuck):
		t.Fatal("no judge request arrived while the plugin's compile was held: the compile blocks the judge-only metric")
	}
	gate.open()
	var r runOutcome
	select {
	case r = <-done:
	case <-time.After(stuck):
		t.Fatal("the run did not finish after the compile was let go")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := readResults(t, out)
	want := map[string]float64{"same": 1, "other": 0}
	for id, exact := range want {
		c, ok := got[id]
		if !ok {
			t.Fatalf("case %s missing from results", id)
		}
		scores := map[string]float64{}
		for _, m := range c.Metrics {
			if m.Error != nil || m.Score == nil {
				t.Fatalf("case %s metric %s: error %v", id, m.Metric, m.Error)
			}
			scores[m.Metric] = *m.Score
			// Only the Wasm metric can wait for a compile, and its wait is
			// part of its latency.
			if m.CompileWaitMS < 0 || m.CompileWaitMS > m.LatencyMS || (m.Metric != "exact" && m.CompileWaitMS != 0) {
				t.Errorf("case %s metric %s: compile wait %v ms of latency %v ms", id, m.Metric, m.CompileWaitMS, m.LatencyMS)
			}
		}
		if !near(scores["exact"], exact) || !near(scores["correctness"], 0.79) {
			t.Errorf("case %s: scores %v, want exact %v and correctness 0.79", id, scores, exact)
		}
	}
}

// TestBadPluginParamsStopBeforeAnyJudgeCall: a plugin metric's params are
// still checked against its kind's schema before New returns — while the
// compile is held, so from the descriptor read before compiling — and
// nothing is sent to the judge.
func TestBadPluginParamsStopBeforeAnyJudgeCall(t *testing.T) {
	judge, _ := firstRequest(t)
	cfg, opts, out := compileEnv(t, judge.URL(), `{ignore_case: "yes"}`)
	gate := newCompileGate(t)
	engine.WithCompileGate(&opts, gate.hold)

	var r runOutcome
	select {
	case r = <-startRun(cfg, opts, out):
	case <-time.After(stuck):
		t.Fatal("New did not return while the compile was held")
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "metric exact") || !strings.Contains(r.err.Error(), "ignore_case") {
		t.Fatalf("want a params error naming metric exact and ignore_case, got %v", r.err)
	}
	if n := judge.Calls(); n != 0 {
		t.Errorf("%d judge calls before the params error, want 0", n)
	}
}

// TestPluginRefusedAfterItsCompileStopsTheRun: a plugin whose background
// compile fails stops the run as unverifiable, naming the plugin, and no
// case is written with that failure as its metric's result.
func TestPluginRefusedAfterItsCompileStopsTheRun(t *testing.T) {
	judge, seen := firstRequest(t)
	cfg, opts, out := compileEnv(t, judge.URL(), "{ignore_case: true}")
	gate := newCompileGate(t)
	gate.refuse = errors.New("compile refused by the test")
	engine.WithCompileGate(&opts, gate.hold)

	done := startRun(cfg, opts, out)
	select {
	case <-seen:
	case <-time.After(stuck):
		t.Fatal("no judge request arrived while the plugin's compile was held")
	}
	gate.open()
	var r runOutcome
	select {
	case r = <-done:
	case <-time.After(stuck):
		t.Fatal("the run did not stop after the plugin was refused")
	}
	var re *engine.RunError
	if !errors.As(r.err, &re) || re.Kind != engine.ErrUnverifiable {
		t.Fatalf("want an ErrUnverifiable RunError, got %v", r.err)
	}
	for _, w := range []string{"plugins.textcheck", "compile refused by the test"} {
		if !strings.Contains(r.err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, r.err)
		}
	}
	if re.Summary == nil || re.Summary.Incomplete == nil {
		t.Fatalf("want an incomplete summary, got %+v", re.Summary)
	}
	for id, c := range readResults(t, out) {
		for _, m := range c.Metrics {
			if m.Error != nil && strings.Contains(m.Error.Message, "compile refused") {
				t.Errorf("case %s was written with the refused plugin's error: %v", id, m.Error)
			}
		}
	}
}

// BenchmarkNewWithWarmCompileCache is New on the start-up config of
// bench/startup.sh (a G-Eval metric and a Wasm plugin metric) with the
// plugin's machine code and descriptor in the compile cache: the work done
// before the first judge call can go out. Close (which waits for the
// background compile) is not timed.
func BenchmarkNewWithWarmCompileCache(b *testing.B) {
	judge := judgetest.New(b)
	cfg, opts, _ := compileEnv(b, judge.URL(), "{ignore_case: true}")
	ctx := context.Background()
	warm, err := engine.New(ctx, cfg, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := engine.WaitCompiled(ctx, warm); err != nil {
		b.Fatal(err)
	}
	warm.Close(ctx) // the cache now holds the machine code and the descriptor
	b.ReportAllocs()
	for b.Loop() {
		eng, err := engine.New(ctx, cfg, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		eng.Close(ctx)
		b.StartTimer()
	}
}

// TestAMetricsPrepareHoldsBackOnlyItsOwnCases: while one metric's prepare
// is still running (a plugin kind's, held by the test), another metric's
// cases are scored — the judge gets G-Eval's scoring requests, not only
// its steps — and the held metric's cases carry its prepared state.
func TestAMetricsPrepareHoldsBackOnlyItsOwnCases(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	slow := &sdk.Plugin{Name: "slowprep", Version: "0.0.1", Kinds: []sdk.Kind{
		&sdk.MetricKind[struct{}]{Name: "slow_prepare",
			Prepare: func(ctx context.Context, _ sdk.Host, _ *struct{}, _ *abi.PrepareRequest) (*abi.PrepareResult, error) {
				select {
				case <-release:
					return &abi.PrepareResult{State: json.RawMessage(`{"ready":true}`)}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
			Measure: func(_ context.Context, _ sdk.Host, _ *struct{}, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
				score := 0.0
				if string(req.Prepared) == `{"ready":true}` {
					score = 1
				}
				return &abi.MeasureResult{Score: &score, Success: score == 1, Threshold: req.Threshold}, nil
			}},
	}}
	scored := make(chan struct{})
	var scoredOnce sync.Once
	steps := judgetest.Reply{Content: `{"steps": ["Compare the facts."]}`}
	score := judgetest.JSONScoreReply("Agrees.", "8", map[string]float64{"8": .7, "7": .2, "9": .1})
	judge := judgetest.New(t, judgetest.WithDefault(judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, `"steps"`) {
				return steps
			}
		}
		scoredOnce.Do(func() { close(scored) })
		return score
	})))
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cases.jsonl": compileCases,
		"anvil.yaml": configFor(judge.URL(), true, correctness+"  - {name: slow, kind: slow_prepare, gate: false}\n")})
	cfg, err := config.Load(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{Cache: "off", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv}
	engine.WithInprocPlugins(&opts, slow)
	out := filepath.Join(dir, "out")
	done := startRun(cfg, opts, out)
	select {
	case <-scored:
	case r := <-done:
		t.Fatalf("the run ended while a prepare was held: %v", r.err)
	case <-time.After(stuck):
		t.Fatal("no scoring request while another metric's prepare was held: prepares hold back every metric")
	}
	open()
	var r runOutcome
	select {
	case r = <-done:
	case <-time.After(stuck):
		t.Fatal("the run did not finish after the prepare was let go")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	for id, c := range readResults(t, out) {
		for _, m := range c.Metrics {
			if m.Score == nil || (m.Metric == "slow" && *m.Score != 1) {
				t.Errorf("case %s metric %s: score %v, error %v", id, m.Metric, m.Score, m.Error)
			}
		}
	}
}

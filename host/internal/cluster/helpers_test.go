package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/judgetest"
)

// startNATS starts an embedded JetStream server on 127.0.0.1 with file
// storage in storeDir and a random port.
func startNATS(t *testing.T, storeDir string, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: storeDir,
		NoLog: true, NoSigs: true, MaxPayload: 8 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// deterministicJudge is a G-Eval judge: Sydney scores 2, anything else 8.
func deterministicJudge(t *testing.T) *judgetest.Server { return enginetest.GEvalJudge(t) }

// repoRoot is the module root, for the Wasm plugins scripts/build-plugins
// builds.
func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// project writes anvil.yaml (a criteria-only G-Eval, which prepares its
// steps once per run, and the textcheck Wasm plugin's exact_match) and a
// dataset of n cases into a new directory.
func project(t *testing.T, judgeURL string, n int, withPlugin bool) string {
	t.Helper()
	wasm := filepath.Join(repoRoot(t), "bin", "wasm", "textcheck.wasm")
	if _, err := os.Stat(wasm); err != nil && withPlugin {
		t.Skip("bin/wasm/textcheck.wasm not built: run scripts/build-plugins textcheck")
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 1
dataset: cases.jsonl
judges:
  default:
    base_url: %s
    model: judge-model
    api_key_env: ANVIL_TEST_KEY
    supports_logprobs: true
    supports_json_schema: true
    price: {input_per_million: 1, output_per_million: 2}
plugins:
  textcheck:
    path: %s
    sha256_file: %s.sha256
    # Compiling under the race detector on a loaded 2-core machine has
    # taken over the default minute; these tests are not about compile time.
    limits: {compile_timeout: 10m}
defaults:
  judge: default
metrics:
  - name: correctness
    kind: geval
    threshold: 0.5
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
  - name: exact
    kind: exact_match
    gate: false
    params: {ignore_case: true, trim: true}
`, judgeURL, wasm, wasm)
	if !withPlugin { // G-Eval alone: no Wasm to compile in every process
		cfg = cfg[:strings.Index(cfg, "plugins:")] + "defaults:" + strings.SplitN(cfg[strings.Index(cfg, "defaults:"):], "defaults:", 2)[1]
		cfg = cfg[:strings.Index(cfg, "  - name: exact")]
	}
	var b strings.Builder
	for i := range n {
		answer := "Canberra"
		if i%7 == 3 {
			answer = "Sydney"
		}
		fmt.Fprintf(&b, `{"id": "case-%03d", "input": "Capital of Australia? (%d)", "actual_output": "%s", "expected_output": "Canberra"}`+"\n", i, i, answer)
	}
	for name, body := range map[string]string{"anvil.yaml": cfg, "cases.jsonl": b.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func quietLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// openEngine loads the project's config as `anvil-host run` does.
func openEngine(t *testing.T, dir string, opts engine.Options) *engine.Engine {
	t.Helper()
	return openConfig(t, filepath.Join(dir, "anvil.yaml"), filepath.Join(dir, "store.db"), opts)
}

// openConfig loads the config file cfgFile with its SQLite store at
// storePath (the examples' directories are not written to).
func openConfig(t *testing.T, cfgFile, storePath string, opts engine.Options) *engine.Engine {
	t.Helper()
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger(t)
	}
	if opts.Getenv == nil {
		opts.Getenv = enginetest.Getenv
	}
	if opts.Cache == "" {
		opts.Cache = "off"
	}
	opts.StorePath = storePath
	opts.CompileCacheDir = compileCache(t)
	eng, err := engine.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	return eng
}

// runLocal is `anvil-host run` without --cluster.
func runLocal(t *testing.T, dir, out string) *results.Summary {
	t.Helper()
	eng := openEngine(t, dir, engine.Options{})
	s, err := eng.Run(context.Background(), engine.RunOptions{OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Write(out, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// workers runs n in-process workers until the test ends; it returns when
// all of them watch for runs.
func workers(t *testing.T, url string, n int, opts WorkerOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Add(1)
		o := opts
		o.URL = url
		if o.Name == "" {
			o.Name = fmt.Sprintf("w%d", i)
		} else {
			o.Name = fmt.Sprintf("%s%d", o.Name, i)
		}
		if o.Getenv == nil {
			o.Getenv = enginetest.Getenv
		}
		if o.Logger == nil {
			o.Logger = quietLogger(t)
		}
		o.CompileCacheDir = compileCache(t)
		var once sync.Once
		o.OnReady = func() { once.Do(ready.Done) }
		go func() {
			defer done.Done()
			if err := RunWorker(ctx, o); err != nil {
				t.Errorf("worker %s: %v", o.Name, err)
				once.Do(ready.Done)
			}
		}()
	}
	ready.Wait()
	t.Cleanup(func() { cancel(); done.Wait() })
}

// runCluster is `anvil-host run --cluster`.
func runCluster(t *testing.T, dir, out, url string, opts CoordinatorOptions, ro engine.RunOptions, eopts engine.Options) (*results.Summary, *Coordinator, error) {
	t.Helper()
	opts.URL = url
	if opts.Logger == nil {
		opts.Logger = quietLogger(t)
	}
	co, err := NewCoordinator(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(co.Close)
	co.EngineOptions(&eopts)
	eng := openEngine(t, dir, eopts)
	ro.OutputDir = out
	s, err := co.Run(context.Background(), eng, ro)
	if err == nil {
		if werr := report.Write(out, s); werr != nil {
			t.Fatal(werr)
		}
	}
	return s, co, err
}

// comparableSummary is summary.json without what differs between any two
// runs: the run id and timings; failed_cases is in results.jsonl order,
// which concurrency makes vary run to run, locally too, so it is sorted.
func comparableSummary(t *testing.T, out string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "run_id")
	delete(m, "started_at")
	delete(m, "finished_at")
	for _, ms := range m["metrics"].([]any) {
		mm := ms.(map[string]any)
		if fc, ok := mm["failed_cases"].([]any); ok {
			slices.SortFunc(fc, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		}
	}
	roundUSD(m)
	n, _ := json.MarshalIndent(m, "", "  ")
	return string(n)
}

// roundUSD rounds every "usd" sum to 12 significant digits: a float sum's
// last bits depend on the order of its terms, which is results.jsonl
// order (0.007352000000000001 one way, 0.007351999999999999 the other).
func roundUSD(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if f, ok := x.(float64); ok && k == "usd" {
				t[k], _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', 12, 64), 64)
				continue
			}
			roundUSD(x)
		}
	case []any:
		for _, x := range t {
			roundUSD(x)
		}
	}
}

// resultLines maps case id → its results.jsonl line without latencies
// and without the worker that evaluated it (resultWorkers), and fails on
// a case written twice.
func resultLines(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := map[string]string{}
	for id, r := range enginetest.ResultsByCase(t, filepath.Join(out, "results.jsonl")) {
		for i := range r.Metrics {
			// Measurements of how a case ran, not of its verdict: fuel
			// depends on the state the instance that ran it was in.
			r.Metrics[i].LatencyMS, r.Metrics[i].Fuel = 0, 0
		}
		r.Worker = ""
		b, _ := json.Marshal(r)
		lines[id] = string(b)
	}
	return lines
}

func mustCase(t *testing.T) *abi.TestCase {
	return &abi.TestCase{ID: "c1", Input: "Capital of Australia?", ActualOutput: "Canberra", ExpectedOutput: "Canberra"}
}

var compileCaches sync.Map // test name → dir

// compileCache is one wazero compile cache per test: the first engine
// compiles the Wasm plugin, the others load it. Tests do not share one:
// wazero v1.12 panicked once loading a module from a cache other test
// processes were writing.
func compileCache(t *testing.T) string {
	if d, ok := compileCaches.Load(t.Name()); ok {
		return d.(string)
	}
	d := t.TempDir()
	compileCaches.Store(t.Name(), d)
	return d
}

// resultScores lists case → metric scores in case order.
func resultScores(t *testing.T, out string) string {
	t.Helper()
	scores := map[string]string{}
	err := results.Each(filepath.Join(out, "results.jsonl"), func(r *results.CaseResult) error {
		var b strings.Builder
		for _, m := range r.Metrics {
			if m.Score != nil {
				fmt.Fprintf(&b, "%s=%v ", m.Metric, *m.Score)
			} else {
				fmt.Fprintf(&b, "%s=%s ", m.Metric, m.Status)
			}
		}
		scores[r.CaseID] = b.String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%s: %s\n", id, scores[id])
	}
	return b.String()
}

// resultWorkers maps case id → the worker its results line names.
func resultWorkers(t *testing.T, out string) map[string]string {
	t.Helper()
	by := map[string]string{}
	err := results.Each(filepath.Join(out, "results.jsonl"), func(r *results.CaseResult) error {
		by[r.CaseID] = r.Worker
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return by
}

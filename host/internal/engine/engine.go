// Package engine runs an evaluation: it streams cases from a dataset, runs
// every configured metric on each with bounded concurrency, and appends
// each finished case to results.jsonl (fsync'd) the moment it is final.
//
// Invariants: one case's failure — a judge fault, a plugin trap, a missing
// field — is recorded on that case and never stops the run; a crash loses
// at most the cases in flight, and --resume skips every case already
// written under the same config hash; memory is flat in the number of
// cases (cases stream in, results stream out, the summary keeps scores only).
package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"sync"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/store"
	"github.com/agentanvil/anvil/sdk"
)

// Options configure an Engine beyond its config file.
type Options struct {
	Logger *slog.Logger
	// Cache overrides defaults.cache: "off", "rw" or "replay".
	Cache string
	// StorePath overrides defaults.store.
	StorePath string
	// CompileCacheDir holds wazero's compiled modules across runs.
	CompileCacheDir string
	// Getenv resolves API keys and OPENAI_* fallbacks; os.Getenv when nil.
	Getenv func(string) string
	// PluginCacheDir holds plugins pulled from registries; when empty,
	// $ANVIL_PLUGIN_CACHE or the user cache directory's anvil/plugins.
	PluginCacheDir string
	// Registry is the OCI client for plugins configured by reference;
	// when nil, one reading the docker config's credentials.
	Registry *oci.Client
	// JudgeCache, when set, is the judges' cache instead of the SQLite
	// store (which is then not opened): the cluster's shared cache.
	JudgeCache judge.Cache
	// JudgeLimits, when set, gives each judge (by name) the limiter that
	// paces its upstream calls instead of its own: the cluster's one
	// budget. It may return nil for a judge that keeps its own.
	JudgeLimits func(judgeName string) judge.Limiter
	// ReplayJudges replay their offline_recording even when this process
	// has their API key: a cluster worker replays exactly the judges its
	// coordinator replays.
	ReplayJudges []string
	// CompileInBackground lets New return once every Wasm plugin has been
	// verified, trusted and described (its kinds and schemas known, every
	// metric's params checked), while its machine code is still being
	// compiled: Run then starts the metrics that need no plugin at once,
	// and a plugin refused when its compile ends stops the run
	// (ErrUnverifiable). Without it New returns only when every plugin is
	// compiled and started.
	CompileInBackground bool
	// Batch, when set, sends judge calls through the providers' batch
	// APIs (docs/batch.md): every judge's that has one under All (`run
	// --batch`), else those configured with batch: true.
	Batch *BatchOptions

	// extraPlugins are linked in beside the first-party kinds (tests).
	extraPlugins []*sdk.Plugin
	// sampleWindow overrides sampleGroupWindow (tests make it long, so
	// only the samples' own progress decides what goes out together).
	sampleWindow time.Duration
	// beforeCompile holds each Wasm compile back (tests: see
	// plugin.RuntimeOptions.BeforeCompile).
	beforeCompile func(ctx context.Context, digest string) error
}

// RunOptions configure one run.
type RunOptions struct {
	Input       string // dataset; overrides the config's dataset
	OutputDir   string
	Limit       int
	Concurrency int
	Resume      bool
	// Progress is called after each finished case with done and total
	// (total 0 when unknown).
	Progress func(done, total int)
	// Dispatch, when set, evaluates the cases instead of this process's
	// workers (the cluster coordinator); Concurrency is then unused.
	Dispatch Dispatcher
	// ResumeArgs are appended to the resume command an incomplete run's
	// summary gives ("--cluster nats://…").
	ResumeArgs string
	// Sink, when set, is given every case of the output directory's
	// results in results.jsonl order — with --resume, first those already
	// there — once each is durable: what builds the reports as the run
	// goes (report.Builder), so nothing reads results.jsonl back.
	Sink results.Sink
}

// BatchOptions are batch mode's settings for a run (judge.BatchOptions
// for each batched judge; the store keeps the batches).
type BatchOptions struct {
	// All batches every judge whose provider has a batch API.
	All bool
	// RetryLive retries requests a batch ended without live, not in a
	// new batch.
	RetryLive bool
	// PollEvery, FlushAfter and MaxRequests: judge.BatchOptions'.
	PollEvery   time.Duration
	FlushAfter  time.Duration
	MaxRequests int
}

// batchConcurrency is the default number of cases in flight when a judge
// batches: a batch holds the calls of the cases waiting on it, so the
// cases in flight bound how large a batch gets.
const batchConcurrency = 1000

// Engine is a loaded configuration, ready to run.
type Engine struct {
	cfg    *config.Config
	opts   Options
	logger *slog.Logger
	store  *store.Store
	judges *judges
	// batching: some judge sends its calls in batches.
	batching bool
	runtime  *plugin.Runtime
	plugins  map[string]plugin.Plugin // by config name, and first-party by plugin name
	digests  map[string]string
	sources  map[string]pluginSource // configured plugins by name
	// compiling are the plugins still being compiled when New returned
	// (CompileInBackground).
	compiling compiling
	kinds     map[string]kindRef
	metrics   []*metric          // run at top level, in config order
	all       map[string]*metric // every metric by key, DAG children included
	hash      string
	identity  identity.Run
	warns     []string
	// storeErr is why the store could not be opened (the run then goes on
	// without a cache and says so in the summary).
	storeErr string
}

// Warnings found while loading (rubric gaps, both criteria and steps, …).
func (e *Engine) Warnings() []string { return e.warns }

// ConfigHash identifies the results this configuration produces.
func (e *Engine) ConfigHash() string { return e.hash }

// Close releases plugins, the runtime and the store.
func (e *Engine) Close(ctx context.Context) error {
	var errs []error
	seen := map[plugin.Plugin]bool{}
	for _, p := range e.plugins {
		if !seen[p] {
			seen[p] = true
			errs = append(errs, p.Close(ctx))
		}
	}
	if e.runtime != nil {
		errs = append(errs, e.runtime.Close(ctx))
	}
	if e.store != nil {
		// A batch being submitted is recorded in the store before it
		// closes: a stopped run resumed polls it instead of paying again.
		for _, j := range e.judges.byName {
			j.WaitSubmitted()
		}
		errs = append(errs, e.store.Close())
	}
	return errors.Join(errs...)
}

// evaluate runs every metric on one case, concurrently. The last metric
// runs on the calling goroutine, a case worker that lives for the run: a
// goroutine started per case began with a small stack and grew it on
// every case (a Wasm call or a judge reply runs deep), which cost a
// one-metric Wasm case ≈ 16 µs of stack copying.
func (e *Engine) evaluate(ctx context.Context, c *abi.TestCase, dry *dryRun) *results.CaseResult {
	r := &results.CaseResult{CaseID: c.ID, ConfigHash: e.hash, Identity: e.identity.Digest, CaseDigest: identity.CaseDigest(c),
		Case: c, Metrics: make([]results.MetricResult, len(e.metrics))}
	var wg sync.WaitGroup
	last := len(e.metrics) - 1
	for i, m := range e.metrics[:max(last, 0)] {
		wg.Go(func() { r.Metrics[i] = e.measure(ctx, m, c, dry) })
	}
	if last >= 0 {
		r.Metrics[last] = e.measure(ctx, e.metrics[last], c, dry)
	}
	wg.Wait()
	return r
}

// configured is the run's metrics as the summary shows them before any
// result: the same fields a result of each carries.
func (e *Engine) configured() []results.Configured {
	out := make([]results.Configured, len(e.metrics))
	for i, m := range e.metrics {
		out[i] = results.Configured{Metric: m.key, Kind: m.kind, Threshold: m.threshold, Gated: m.gated}
	}
	return out
}

func (e *Engine) prepareSummaries() []results.PrepareSummary {
	var out []results.PrepareSummary
	for _, m := range e.allInOrder() {
		if m.prepared == nil && m.prepareErr == nil && m.prepareDetails == nil {
			continue
		}
		p := results.PrepareSummary{Metric: m.key, Details: m.prepareDetails, Usage: m.prepareUsage}
		if m.prepareErr != nil {
			p.Error = m.prepareErr.Error()
		}
		out = append(out, p)
	}
	return out
}

// OutputDir is the configured output directory (defaults.output_dir,
// resolved against the config file), or "anvil-results".
func (e *Engine) OutputDir() string {
	if d := e.cfg.Resolve(e.cfg.Defaults.OutputDir); d != "" {
		return d
	}
	return "anvil-results"
}

// allInOrder lists every metric, DAG children included, in config order.
func (e *Engine) allInOrder() []*metric {
	var out []*metric
	for _, mc := range e.cfg.Metrics {
		if m := e.all[mc.Key]; m != nil {
			out = append(out, m)
		}
	}
	return out
}

// Graph returns the validated graph of a dag metric.
func (e *Engine) Graph(metricKey string) (*dag.Graph, bool) {
	m := e.all[metricKey]
	if m == nil || m.graph == nil {
		return nil, false
	}
	return m.graph, true
}

// DAGMetrics lists the keys of the dag metrics, in config order.
func (e *Engine) DAGMetrics() []string {
	var out []string
	for _, m := range e.allInOrder() {
		if m.graph != nil {
			out = append(out, m.key)
		}
	}
	return out
}

// Store is the engine's store, nil when the cache is off.
func (e *Engine) Store() *store.Store { return e.store }

// defaultConcurrency keeps enough cases in flight to saturate the judges:
// twice the largest judge's max_concurrency (a case also spends time in
// plugins and between its calls), at least 8. The judges' own limits then
// throttle the calls themselves.
func (e *Engine) defaultConcurrency() int {
	if e.batching {
		return batchConcurrency
	}
	n := 8
	for _, j := range e.judges.byName {
		n = max(n, 2*j.Config().MaxConcurrency)
	}
	return n
}

// prepareAll runs every metric's once-per-run work concurrently: each
// criteria-only G-Eval waits one judge latency for its steps, and those
// waits need not add up.
func (e *Engine) prepareAll(ctx context.Context, dry *dryRun) {
	e.startPrepares(ctx, dry)()
}

// startPrepares starts every metric's once-per-run work concurrently and
// returns a function that waits for all of it. Until a metric's own
// prepare is done its measure waits, and only its: a metric whose plugin
// is still compiling does not hold back the others' cases.
func (e *Engine) startPrepares(ctx context.Context, dry *dryRun) (wait func()) {
	var wg sync.WaitGroup
	for _, m := range e.allInOrder() {
		done := make(chan struct{})
		m.prepareDone = done
		wg.Go(func() {
			defer close(done)
			e.prepare(ctx, m, dry)
		})
	}
	return wg.Wait
}

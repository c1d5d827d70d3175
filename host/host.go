package host

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
)

// Config is a loaded anvil.yaml: judges, plugins, metrics and defaults.
type Config struct {
	c *config.Config
}

// LoadConfig reads and checks the config at path. Errors name the file,
// the line and the key.
func LoadConfig(path string) (*Config, error) {
	c, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return &Config{c: c}, nil
}

// File is the path the config was read from.
func (c *Config) File() string { return c.c.File }

// Options tune an evaluation beyond its config. The zero value is what
// `anvil-host run` does.
type Options struct {
	// Logger receives warnings and plugin logs; discarded when nil.
	Logger *slog.Logger
	// Cache is the judge cache mode: "off", "rw" or "replay"; default from
	// the config, else "rw".
	Cache string
	// StorePath overrides where the judge cache lives.
	StorePath string
	// OutputDir, when set, receives results.jsonl, cases/, summary.json,
	// junit.xml and report.html as `anvil-host run -o` writes them; when
	// empty the outputs go to a temporary directory removed afterwards.
	OutputDir string
	// Concurrency is the cases in flight; default from the config.
	Concurrency int
	// Getenv resolves API keys and OPENAI_* fallbacks; os.Getenv when nil.
	Getenv func(string) string
}

// Summary is what summary.json holds: per metric n, mean, pass rate,
// errors, judge usage, and the run's verdict for a gate.
type Summary = results.Summary

// CaseResult is one case with every metric's outcome.
type CaseResult = results.CaseResult

// MetricResult is one metric's outcome on one case.
type MetricResult = results.MetricResult

// Result is an evaluation's outcome.
type Result struct {
	Summary *Summary
	// Cases are in the order they finished, each with its test case.
	Cases []CaseResult
}

// Passed reports whether the run passed as a gate would: every gated
// metric verified and above its threshold on every case.
func (r *Result) Passed() bool { return r.Summary != nil && r.Summary.Passed }

// Failure is one gated metric that did not pass on one case.
type Failure struct {
	CaseID string
	Metric string
	// Status is "failed" (below threshold) or "error" (no score).
	Status    string
	Score     *float64
	Threshold float64
	Reason    string
}

func (f Failure) String() string {
	score := "no score"
	if f.Score != nil {
		score = fmt.Sprintf("score %.3f", *f.Score)
	}
	return fmt.Sprintf("case %q, metric %s: %s (%s, threshold %.2f): %s", f.CaseID, f.Metric, f.Status, score, f.Threshold, f.Reason)
}

// Failures lists every gated metric result that failed its threshold or
// errored, case by case. Skipped cases are not failures: a metric that
// skipped everything is in Summary.Unverified instead.
func (r *Result) Failures() []Failure {
	var out []Failure
	for _, c := range r.Cases {
		for _, m := range c.Metrics {
			if !m.Gated || (m.Status != results.StatusFailed && m.Status != results.StatusError) {
				continue
			}
			reason := m.Reason
			if m.Error != nil {
				reason = m.Error.Error()
			}
			out = append(out, Failure{CaseID: c.CaseID, Metric: m.Metric, Status: m.Status, Score: m.Score, Threshold: m.Threshold, Reason: reason})
		}
	}
	return out
}

// Evaluate runs every metric of cfg on cases, as `anvil-host run` runs
// them on a dataset: the cases are checked whole first (unique ids), the
// verdicts are the host's, and the judge cache is used. A nil error means
// the evaluation finished; whether it passed is Result.Passed. A run that
// stopped early (a judge that is down, ctx cancelled) returns the partial
// Result and an error.
func Evaluate(ctx context.Context, cfg *Config, cases []abi.TestCase, opts Options) (*Result, error) {
	dir, err := os.MkdirTemp("", "anvil-evaluate-")
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	defer os.RemoveAll(dir)
	input := filepath.Join(dir, "cases.jsonl")
	if err := writeCases(input, cases); err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return run(ctx, cfg, input, opts)
}

// Run evaluates the config's own dataset.
func Run(ctx context.Context, cfg *Config, opts Options) (*Result, error) {
	return run(ctx, cfg, "", opts)
}

func run(ctx context.Context, cfg *Config, input string, opts Options) (*Result, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	eng, err := engine.New(ctx, cfg.c, engine.Options{
		Logger: logger, Cache: opts.Cache, StorePath: opts.StorePath,
		CompileCacheDir: compileCacheDir(), Getenv: opts.Getenv,
	})
	if err != nil {
		return nil, err
	}
	defer eng.Close(context.WithoutCancel(ctx))
	out := opts.OutputDir
	if out == "" {
		if out, err = os.MkdirTemp("", "anvil-results-"); err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		defer os.RemoveAll(out)
	}
	// The cases and the reports are taken as the run writes its results,
	// so nothing reads them back.
	var cases caseList
	sink := results.Sinks{&cases}
	var reports *report.Builder
	if opts.OutputDir != "" {
		reports = report.NewBuilder(out)
		defer reports.Close()
		sink = append(sink, reports)
	}
	s, runErr := eng.Run(ctx, engine.RunOptions{Input: input, OutputDir: out, Concurrency: opts.Concurrency, Sink: sink})
	if s == nil {
		return nil, runErr
	}
	res := &Result{Summary: s, Cases: cases}
	if runErr == nil && reports != nil {
		if err := reports.Write(s, ""); err != nil {
			return res, fmt.Errorf("write reports: %w", err)
		}
	}
	return res, runErr
}

// caseList keeps every case a run writes, with its test case.
type caseList []CaseResult

func (l *caseList) Add(r *results.CaseResult) { *l = append(*l, *r) }

func writeCases(path string, cases []abi.TestCase) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range cases {
		if err := enc.Encode(&cases[i]); err != nil {
			f.Close()
			return fmt.Errorf("case %d (%q): %w", i, cases[i].ID, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MaybeRunTrampoline must be the first call in the main of a program (or
// the TestMain of a test binary) that starts process plugins: the host
// re-executes its own binary as the plugins' sandbox trampoline, and this
// call, in that child, confines it and runs the plugin (never returning).
// In every other process it returns at once. Main calls it.
func MaybeRunTrampoline() { plugin.MaybeRunTrampoline() }

// compileCacheDir is where wazero keeps compiled plugins across runs, as
// the CLI keeps them.
func compileCacheDir() string {
	if d := os.Getenv("ANVIL_COMPILE_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "anvil", "wazero")
	}
	return ""
}

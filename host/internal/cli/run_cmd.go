package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentanvil/anvil/host/internal/cluster"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/progress"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
)

// common flags of run, estimate and validate.
type loadFlags struct {
	config   string
	cache    string
	store    string
	logLevel string
}

func (f *loadFlags) register(cmd *cobra.Command) {
	registerConfigFlag(cmd, false, &f.config)
	cmd.Flags().StringVar(&f.cache, "cache", "", "judge cache: off, rw (read-write) or replay (offline; a miss is an error); default from config, else rw")
	cmd.Flags().StringVar(&f.store, "store", "", "SQLite store path; default defaults.store in the config (relative to it), else .anvil/store.db beside the config file")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn, error")
	_ = cmd.RegisterFlagCompletionFunc("cache", cobra.FixedCompletions([]string{"off", "rw", "replay"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
}

// configPath is the config file the command reads, by the one discovery
// rule (findConfig).
func (f *loadFlags) configPath() (string, error) {
	path, err := findConfig(f.config, os.Getenv)
	if err != nil {
		return "", usageErr(err)
	}
	return path, nil
}

func (f *loadFlags) load(ctx context.Context, stderr io.Writer, adjust ...func(*engine.Options)) (*config.Config, *engine.Engine, error) {
	switch f.cache {
	case "", "off", "rw", "replay":
	default:
		return nil, nil, usageErr(fmt.Errorf("--cache %q: want off, rw or replay", f.cache))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, nil, usageErr(fmt.Errorf("--log-level: %w", err))
	}
	path, err := f.configPath()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts := engine.Options{
		Logger:          logger,
		Cache:           f.cache,
		StorePath:       f.store,
		CompileCacheDir: compileCacheDir(),
	}
	for _, a := range adjust {
		a(&opts)
	}
	eng, err := engine.New(ctx, cfg, opts)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	return cfg, eng, nil
}

// checkKinds runs every metric kind's own params check (validate, and run
// before its first judge call), printing its warnings; a config the kind
// refuses is exit 2.
func checkKinds(ctx context.Context, eng *engine.Engine, stderr io.Writer) ([]string, error) {
	warns, err := eng.CheckKinds(ctx)
	for _, w := range warns {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err != nil {
		return warns, usageErr(err)
	}
	return warns, nil
}

// compileCacheDir is where wazero keeps compiled plugins across runs.
func compileCacheDir() string {
	if d := os.Getenv("ANVIL_COMPILE_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "anvil", "wazero")
	}
	return ""
}

func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// writeJSON writes v as indented JSON: the --json output of every command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// positiveFlags rejects an explicit zero or negative value for each named
// integer flag: "--limit 0" is a mistake, not a request for the default.
func positiveFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if n, err := cmd.Flags().GetInt(name); err == nil && n <= 0 {
			return usageErr(fmt.Errorf("--%s %d: must be a positive number (leave it out for the default)", name, n))
		}
	}
	return nil
}

// verdictExit maps a finished run's verdict to its exit code.
func verdictExit(s *results.Summary) error {
	switch s.Verdict {
	case results.VerdictPassed:
		return nil
	case results.VerdictFailed:
		return &exitError{code: exitThreshold, err: fmt.Errorf("a gated metric failed its threshold")}
	default:
		why := report.WithoutJudgeNotes(s, strings.Join(s.Unverified, "; ")) // the judges' notes are printed above it
		return &exitError{code: exitUnverified, err: fmt.Errorf("could not verify: %s", why)}
	}
}

// runFailure reports a run that stopped early: the partial table (or,
// with --json, the partial summary) when there is a summary, how to
// resume, and the exit code of its kind.
func runFailure(stdout, stderr io.Writer, asJSON bool, err error) error {
	var re *engine.RunError
	if !errors.As(err, &re) {
		return &exitError{code: exitUnverified, err: err}
	}
	if re.Summary != nil {
		notes := stdout
		if asJSON {
			_ = writeJSON(stdout, re.Summary)
			notes = stderr
		} else {
			_ = report.TableWith(stdout, re.Summary, report.TableOptions{Color: colorFor(stdout, os.Getenv)})
		}
		if re.Summary.Incomplete != nil {
			fmt.Fprintf(notes, "INCOMPLETE: %s\nresume with: %s\n", re.Summary.Incomplete.Reason, re.Summary.Incomplete.Resume)
		}
	}
	switch re.Kind {
	case engine.ErrInput:
		return &exitError{code: exitUsage, err: err}
	case engine.ErrInterrupted:
		return &exitError{code: exitInterrupted, err: err}
	default:
		return &exitError{code: exitUnverified, err: err}
	}
}

// progressMode is how run shows its progress on stderr: the --progress
// value, else none with --no-progress, else a bar on a terminal and plain
// lines elsewhere (a CI log).
func progressMode(cmd *cobra.Command, flag string, noProgress bool, stderr io.Writer) (string, error) {
	if d, _ := cmd.Flags().GetDuration("progress-interval"); d <= 0 {
		return "", usageErr(fmt.Errorf("--progress-interval %s: must be positive", d))
	}
	switch flag {
	case "":
		if noProgress {
			return "none", nil
		}
		if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return "bar", nil
		}
		return "plain", nil
	case "bar", "plain", "none":
		if noProgress && flag != "none" {
			return "", usageErr(fmt.Errorf("--no-progress and --progress %s disagree", flag))
		}
		return flag, nil
	}
	return "", usageErr(fmt.Errorf("--progress %q: want bar, plain or none", flag))
}

func newRunCmd() *cobra.Command {
	var lf loadFlags
	var ro engine.RunOptions
	var noProgress, asJSON bool
	var progressFlag string
	var progressEvery time.Duration
	var bf batchFlags
	var cf clusterFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Evaluate a dataset with the configured metrics",
		Long: `Evaluate every case of the dataset with every configured metric.

The dataset is read whole first: a record that does not parse or a
duplicate id stops the run before the first judge call.

Outputs (in --output-dir): results.jsonl (one line per case, appended and
fsync'd as each case finishes), cases/<id>.json, summary.json, junit.xml,
report.html. A run first removes an earlier run's summary and reports from
the directory; a run that stops early writes summary.json marked incomplete,
with the command that resumes it.

With --json, stdout is the summary as JSON (the document summary.json
holds) instead of the table; progress, warnings and notes stay on stderr.

With --cluster nats://HOST:PORT the cases are evaluated by the workers
(` + "`anvil-host worker`" + `) attached to that NATS JetStream server, and this
process writes the same outputs; see docs/cluster.md.

` + configRuleHelp + `

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			if err := positiveFlags(cmd, "limit", "concurrency"); err != nil {
				return err
			}
			mode, err := progressMode(cmd, progressFlag, noProgress, stderr)
			if err != nil {
				return err
			}
			if name := cf.orphan(cmd); name != "" {
				return usageErr(fmt.Errorf("--%s needs --cluster", name))
			}
			var co *cluster.Coordinator
			var adjust []func(*engine.Options)
			if cf.url != "" {
				if co, err = cf.coordinator(ctx, lf.logLevel, stderr); err != nil {
					return err
				}
				defer co.Close()
				adjust = append(adjust, co.EngineOptions)
			} else {
				// A local run starts its judge-only metrics while its
				// plugins compile; their params are checked before New
				// returns all the same.
				adjust = append(adjust, func(o *engine.Options) { o.CompileInBackground = true })
			}
			batch, err := bf.options(cmd)
			if err != nil {
				return err
			}
			if batch != nil {
				adjust = append(adjust, func(o *engine.Options) { o.Batch = batch })
			}
			cfg, eng, err := lf.load(ctx, stderr, adjust...)
			if err != nil {
				return err
			}
			defer eng.Close(context.WithoutCancel(ctx))
			if _, err := checkKinds(ctx, eng, stderr); err != nil {
				return err
			}
			if ro.OutputDir == "" {
				ro.OutputDir = eng.OutputDir()
			}
			tracker := progress.NewTracker(nil)
			var bar *progress.Bar
			stopTicks := func() {}
			switch mode {
			case "bar":
				bar = progress.NewBar(tracker, stderr)
				ro.Progress = bar.Update
			case "plain":
				plain := progress.NewPlain(tracker, stderr, progressEvery)
				ro.Progress = plain.Update
				// Lines come on time while no case finishes (start-up, a
				// slow judge); none after the run ends.
				stop, stopped := make(chan struct{}), make(chan struct{})
				go func() { defer close(stopped); plain.Run(stop) }()
				stopTicks = sync.OnceFunc(func() { close(stop); <-stopped })
				defer stopTicks()
			}
			// The reports are built as the cases are written, so nothing
			// reads results.jsonl back.
			reports := report.NewBuilder(ro.OutputDir)
			defer reports.Close()
			ro.Sink = results.Sinks{reports, tracker}
			var s *results.Summary
			if co != nil {
				s, err = co.Run(ctx, eng, ro)
			} else {
				s, err = eng.Run(ctx, ro)
			}
			if bar != nil {
				bar.Finish()
			}
			stopTicks()
			if err != nil {
				return runFailure(cmd.OutOrStdout(), stderr, asJSON, err)
			}
			if err := reports.Write(s, cfg.File); err != nil {
				return &exitError{code: exitUnverified, err: fmt.Errorf("write reports: %w", err)}
			}
			if asJSON {
				// stdout is the summary alone; what the table would say
				// beside it goes to stderr.
				for _, j := range s.Judges {
					if j.Note != "" {
						fmt.Fprintf(stderr, "judge %s: %s\n", j.Name, j.Note)
					}
				}
				if err := writeJSON(cmd.OutOrStdout(), s); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "results: %s\n", ro.OutputDir)
				return verdictExit(s)
			}
			if err := report.TableWith(cmd.OutOrStdout(), s, report.TableOptions{Color: colorFor(cmd.OutOrStdout(), os.Getenv)}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "results: %s\n", ro.OutputDir)
			return verdictExit(s)
		},
	}
	lf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&ro.Input, "input", "", "dataset (JSONL or JSON array); default from config")
	f.StringVarP(&ro.OutputDir, "output-dir", "o", "", "output directory; default from config, else anvil-results")
	f.IntVar(&ro.Limit, "limit", 0, "evaluate only the first N cases of the dataset")
	f.IntVar(&ro.Concurrency, "concurrency", 0, "cases in flight (judges throttle calls with their own limits); default from config, else twice the largest judge max_concurrency, at least 8")
	f.BoolVar(&ro.Resume, "resume", false, "skip cases already in results.jsonl under the same config hash; those with an error marked retryable (a judge outage, a lost cluster worker) are evaluated again")
	f.StringVar(&progressFlag, "progress", "", "progress on stderr: bar (a terminal's progress bar), plain (a line every --progress-interval and at each 10%, for a CI log) or none; default bar on a terminal, else plain")
	f.DurationVar(&progressEvery, "progress-interval", 30*time.Second, "with --progress plain: the longest time between two progress lines")
	f.BoolVar(&noProgress, "no-progress", false, "same as --progress none")
	_ = cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions([]string{"bar", "plain", "none"}, cobra.ShellCompDirectiveNoFileComp))
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON on stdout instead of the table (the exit code is the same)")
	bf.register(cmd)
	cf.register(cmd, true)
	return cmd
}

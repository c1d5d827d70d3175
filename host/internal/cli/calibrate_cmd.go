package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/calibrate"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

func newCalibrateCmd() *cobra.Command {
	var (
		lf         loadFlags
		labelsPath string
		// referenceRun, when set, is a run whose verdicts are the labels.
		referenceRun string
		resultsDir   string
		ro           engine.RunOptions
		opts         calibrate.Options
		asJSON       bool
	)
	cmd := &cobra.Command{
		Use:   "calibrate --labels LABELS.jsonl [--results RUN_DIR]",
		Short: "Measure each metric's agreement with human labels (Spearman, Kendall, Pearson, Cohen's κ, Krippendorff's α)",
		Long: `Measure how well each metric's judge agrees with human labels.

The labels file is JSONL, one human judgement per line:

  {"case_id": "q1", "metric": "correctness", "rater": "ana", "score": 4, "pass": true}

case_id and metric are required; rater is optional; give score (any numeric
scale), pass, or both. Several raters may label one case. It is checked
whole before anything runs: a bad line, an unknown metric or an unknown case
is an error naming file:line and the field.

With --labels-from-run REF_DIR the labels are another run's scored cases
(its score and verdict per case and metric, as one rater "reference run"):
the agreement of this run's judge with that run's — a judge cascade's with
its strong judge alone, one model's with another's.

With --results RUN_DIR the judge's scores are read from that run's
results.jsonl; otherwise the evaluation runs first (as ` + "`run`" + ` does, into
--output-dir). Per metric: Spearman ρ, Kendall τ-b and Pearson r between the
judge's score and the raters' mean score, Cohen's κ between the judge's
pass/fail and the raters' majority, Krippendorff's α among the raters (and
on pass/fail with the judge as one more rater) — each with a bootstrap
confidence interval over cases. The result is a table (or, with --json, the
JSON document) on stdout and calibration.json in the run directory, which
report.html shows.

` + configRuleHelp + `

Exit codes: 0 calibrated; 2 usage, config, labels or dataset error (nothing
evaluated); 3 could not verify (the evaluation could not finish, an I/O
failure); 130 interrupted. A threshold failure of the evaluation itself is
not calibrate's verdict: it still exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := positiveFlags(cmd, "resamples"); err != nil {
				return err
			}
			switch {
			case labelsPath != "" && referenceRun != "":
				return usageErr(errors.New("give --labels or --labels-from-run, not both"))
			case labelsPath == "" && referenceRun == "":
				return usageErr(errors.New("--labels is required (a JSONL file of human labels), or --labels-from-run RUN_DIR (another run's verdicts)"))
			}
			if !(opts.Level > 0 && opts.Level < 1) {
				return usageErr(fmt.Errorf("--level %v: want a fraction between 0 and 1 (0.95 for 95%%)", opts.Level))
			}
			if resultsDir != "" && (ro.OutputDir != "" || ro.Input != "") {
				return usageErr(errors.New("--results reads an existing run: --output-dir and --input are for running one"))
			}
			var labels []calibrate.Label
			var err error
			if referenceRun != "" {
				labels, labelsPath, err = calibrate.LabelsFromRun(referenceRun)
			} else {
				labels, err = calibrate.ReadLabels(labelsPath)
			}
			if err != nil {
				return usageErr(err)
			}
			// The run's results are read once, or not at all after a
			// run: they feed the calibration and the run's reports, which
			// are written after calibration.json, which they show.
			var summary *results.Summary
			var res *calibrate.Results
			var reports *report.Builder
			ran := resultsDir == ""
			if !ran {
				cfg, err := loadConfigOnly(&lf)
				if err != nil {
					return err
				}
				summary, err = readSummaryFile(resultsDir)
				if err != nil {
					return &exitError{code: exitUnverified, err: err}
				}
				var also results.Sink
				if summary != nil {
					reports = report.NewBuilder(resultsDir)
					defer reports.Close()
					also = reports
				}
				if res, err = calibrate.LoadResults(resultsDir, also); err != nil {
					return usageErr(err)
				}
				if err := calibrate.CheckLabels(labelsPath, labels, metricKeys(cfg), res.Cases, filepath.Join(resultsDir, "results.jsonl")); err != nil {
					return usageErr(err)
				}
			} else {
				run, err := runForCalibration(ctx, cmd, &lf, &ro, labelsPath, labels, stderr)
				if err != nil {
					return err
				}
				defer run.reports.Close()
				summary, resultsDir, res, reports = run.summary, run.dir, run.results, run.reports
			}
			configPath, err := lf.configPath()
			if err != nil {
				return err
			}
			rep, calErr := calibrate.Calibrate(labelsPath, labels, res, opts)
			if calErr == nil {
				if err := calibrate.WriteFile(resultsDir, rep); err != nil {
					return &exitError{code: exitUnverified, err: err}
				}
			}
			// The reports of a run made here are written whether or not
			// its calibration succeeds; an existing run's only with a new
			// calibration. Both read the config found here.
			if summary != nil && (calErr == nil || ran) {
				if err := reports.Write(summary, configPath); err != nil {
					return &exitError{code: exitUnverified, err: fmt.Errorf("write reports: %w", err)}
				}
			}
			if calErr != nil {
				return usageErr(calErr)
			}
			if asJSON {
				err = writeJSON(stdout, rep)
			} else {
				err = calibrate.WriteTable(stdout, rep)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "calibration: %s\n", filepath.Join(resultsDir, calibrate.FileName))
			return nil
		},
	}
	lf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&labelsPath, "labels", "", "human labels (JSONL: case_id, metric, rater, score and/or pass)")
	f.StringVar(&referenceRun, "labels-from-run", "", "another run's output directory whose scores and verdicts are the labels (one rater): agreement with its judge, e.g. a judge cascade's with its strong judge alone")
	f.StringVar(&resultsDir, "results", "", "a run's output directory to calibrate (default: run the evaluation first)")
	f.StringVar(&ro.Input, "input", "", "dataset to evaluate (without --results); default from config")
	f.StringVarP(&ro.OutputDir, "output-dir", "o", "", "output directory of the evaluation (without --results); default from config, else anvil-results")
	f.BoolVar(&asJSON, "json", false, "print the calibration as JSON on stdout instead of the table")
	f.Float64Var(&opts.Level, "level", stats.DefaultLevel, "confidence level of the intervals")
	f.IntVar(&opts.Resamples, "resamples", stats.DefaultResamples, "bootstrap resamples")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the resampling (the same seed gives the same intervals)")
	return cmd
}

// loadConfigOnly reads the config (for its metric names) without building
// an engine: calibrating an existing run calls no judge and loads no plugin.
func loadConfigOnly(lf *loadFlags) (*config.Config, error) {
	path, err := lf.configPath()
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, usageErr(err)
	}
	return cfg, nil
}

func metricKeys(cfg *config.Config) []string {
	keys := make([]string, 0, len(cfg.Metrics))
	for _, m := range cfg.Metrics {
		keys = append(keys, m.Key)
	}
	return keys
}

// calibrationRun is an evaluation run for calibrate: its summary and
// output directory, its results gathered for the calibration and its
// reports, to be written after calibration.json.
type calibrationRun struct {
	summary *results.Summary
	dir     string
	results *calibrate.Results
	reports *report.Builder
}

// runForCalibration checks the labels against the config and the dataset,
// then evaluates the dataset as `run` does.
func runForCalibration(ctx context.Context, cmd *cobra.Command, lf *loadFlags, ro *engine.RunOptions, labelsPath string, labels []calibrate.Label, stderr io.Writer) (*calibrationRun, error) {
	cfg, eng, err := lf.load(ctx, stderr)
	if err != nil {
		return nil, err
	}
	defer eng.Close(context.WithoutCancel(ctx))
	input := ro.Input
	if input == "" {
		input = cfg.Resolve(cfg.Dataset)
	}
	if input == "" {
		return nil, usageErr(fmt.Errorf("no dataset: pass --input or set dataset in %s", cfg.File))
	}
	ids, err := datasetIDs(ctx, input)
	if err != nil {
		return nil, usageErr(err)
	}
	if err := calibrate.CheckLabels(labelsPath, labels, metricKeys(cfg), ids, input); err != nil {
		return nil, usageErr(err)
	}
	if ro.OutputDir == "" {
		ro.OutputDir = eng.OutputDir()
	}
	ran := &calibrationRun{dir: ro.OutputDir, results: calibrate.NewResults(ro.OutputDir), reports: report.NewBuilder(ro.OutputDir)}
	ro.Sink = results.Sinks{ran.results, ran.reports}
	s, err := eng.Run(ctx, *ro)
	if err != nil {
		ran.reports.Close()
		return nil, runFailure(cmd.OutOrStdout(), stderr, false, err)
	}
	if err := ran.results.Err(); err != nil {
		ran.reports.Close()
		return nil, &exitError{code: exitUnverified, err: err}
	}
	ran.summary = s
	for _, j := range s.Judges {
		if j.Note != "" {
			fmt.Fprintf(stderr, "judge %s: %s\n", j.Name, j.Note)
		}
	}
	fmt.Fprintf(stderr, "evaluated %d cases: verdict %s; results: %s\n", s.Cases, s.Verdict, ro.OutputDir)
	return ran, nil
}

// datasetIDs reads the dataset's case ids (checking every record, as a run
// does before its first judge call).
func datasetIDs(ctx context.Context, path string) (map[string]bool, error) {
	ds, err := engine.OpenDataset(path)
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	ids := map[string]bool{}
	for {
		c, err := ds.Next(ctx)
		if errors.Is(err, io.EOF) {
			return ids, nil
		}
		if err != nil {
			return nil, err
		}
		ids[c.ID] = true
	}
}

// readSummaryFile reads dir/summary.json; nil when the run has none.
func readSummaryFile(dir string) (*results.Summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s results.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	return &s, nil
}

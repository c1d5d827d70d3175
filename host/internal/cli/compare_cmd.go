package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/compare"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

func newCompareCmd() *cobra.Command {
	var (
		opts     compare.Options
		asJSON   bool
		output   string
		maxFlips int
		toReport bool
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Tell a regression from noise: run B against run A, per metric, with paired statistics",
		Long: `Compare two output directories of ` + "`anvil-host run`" + ` (results.jsonl, and
summary.json when present) of the same evaluation: for each metric, the mean
score difference B − A over the cases both runs scored, with a paired
bootstrap confidence interval and a paired sign-flip permutation test, and
the cases whose pass/fail flipped (pass→fail first).

A metric is significantly worse when the one-sided test of "B is lower than
A" gives p < 1 − level (0.05 by default); the interval shows how much. Runs of different configurations
(other metrics, thresholds, params or judge models) are an error saying what
differs, unless --allow-config-change — and so are runs of one config whose
judges were resolved otherwise (another model or base URL from the
environment, another request setting), whose built-in kinds were built from
other sources, or whose shared cases ask other questions (summary.json's
identity, results.jsonl's case digests). Runs made before these were
recorded are compared with a warning that they cannot be checked.

With --json, stdout is the comparison as JSON instead of the table;
--output also writes that JSON to a file. With --report, the comparison is
written as compare.json into RUN_B's directory and RUN_B's report.html is
drawn again with an "A vs B" section: per metric the mean difference with
its interval, p and verdict, the flipped cases pass→fail first (RUN_B needs
its summary.json).

Exit codes: 0 no gated metric is significantly worse; 1 a gated metric is
significantly worse in B; 2 usage error, a directory that is not a run, or
runs that cannot be compared; 3 could not verify (a gated metric has no case
both runs scored).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := positiveFlags(cmd, "resamples", "max-flips"); err != nil {
				return err
			}
			if !(opts.Level > 0 && opts.Level < 1) {
				return usageErr(fmt.Errorf("--level %v: want a fraction between 0 and 1 (0.95 for 95%%)", opts.Level))
			}
			a, err := compare.Load(args[0], nil)
			if err != nil {
				return usageErr(err)
			}
			// With --report, B's reports are built from the same read of
			// its results.jsonl.
			var reportsB *report.Builder
			var alsoB results.Sink
			if toReport {
				reportsB = report.NewBuilder(args[1])
				defer reportsB.Close()
				alsoB = reportsB
			}
			b, err := compare.Load(args[1], alsoB)
			if err != nil {
				return usageErr(err)
			}
			if toReport && b.Summary == nil {
				return usageErr(fmt.Errorf("--report: run %s has no summary.json to draw its report from", args[1]))
			}
			rep, err := compare.Compare(a, b, opts)
			var mismatch *compare.MismatchError
			if errors.As(err, &mismatch) {
				return usageErr(err)
			}
			if err != nil {
				return &exitError{code: exitUnverified, err: err}
			}
			if output != "" {
				f, err := os.Create(output)
				if err != nil {
					return &exitError{code: exitUnverified, err: fmt.Errorf("--output: %w", err)}
				}
				err = writeJSON(f, rep)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return &exitError{code: exitUnverified, err: fmt.Errorf("--output %s: %w", output, err)}
				}
			}
			if toReport {
				if err := report.WriteComparison(b.Dir, rep); err != nil {
					return &exitError{code: exitUnverified, err: fmt.Errorf("--report: %w", err)}
				}
				if err := reportsB.Write(b.Summary, ""); err != nil {
					return &exitError{code: exitUnverified, err: fmt.Errorf("--report: write reports: %w", err)}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "A vs B: %s\n", filepath.Join(b.Dir, "report.html"))
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = writeJSON(out, rep)
			} else {
				err = compare.WriteTable(out, rep, maxFlips)
			}
			if err != nil {
				return &exitError{code: exitUnverified, err: err}
			}
			switch rep.Verdict {
			case compare.VerdictRegressed:
				return &exitError{code: exitThreshold, err: fmt.Errorf("significantly worse in %s: %s", args[1], strings.Join(rep.Regressed, ", "))}
			case compare.VerdictUnverified:
				return &exitError{code: exitUnverified, err: fmt.Errorf("could not verify: a gated metric has no case scored in both runs, or no metric was compared")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON instead of the table")
	cmd.Flags().StringVarP(&output, "output", "o", "", "also write the comparison as JSON to this file")
	cmd.Flags().Float64Var(&opts.Level, "level", stats.DefaultLevel, "confidence level of the intervals; the one-sided test's significance level is 1 − level")
	cmd.Flags().IntVar(&opts.Resamples, "resamples", stats.DefaultResamples, "bootstrap resamples (and permutation-test draws above its exact limit)")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "seed of the resampling (the same seed gives the same report)")
	cmd.Flags().BoolVar(&opts.AllowConfigChange, "allow-config-change", false, "compare the shared metrics of runs of different configurations or judges, listing the differences")
	cmd.Flags().BoolVar(&toReport, "report", false, "write compare.json into RUN_B and redraw RUN_B's report.html with an A vs B section")
	cmd.Flags().IntVar(&maxFlips, "max-flips", 10, "flipped cases listed per metric in the table (--json lists all)")
	return cmd
}

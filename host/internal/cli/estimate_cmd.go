package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newEstimateCmd() *cobra.Command {
	var lf loadFlags
	var input string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "estimate",
		Short: "Project judge calls, tokens and USD before spending anything",
		Long: `Run every metric's own logic against a dry-run judge that prices each
request instead of sending it. Judge calls are upstream completions,
counted as run counts them: G-Eval steps in prepare, one call per sample
when a judge without logprobs samples a score. A repair of an unusable
reply, and a call made again when a server rejects json_schema, are not
predicted. Requests already in the cache (G-Eval steps from an earlier run)
count as cached and free. Output tokens are assumed at 150 per reply unless
a request caps them lower. A request larger than its judge takes
(max_input_tokens, tokens_per_minute) is counted as refused, not priced.

` + configRuleHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			_, eng, err := lf.load(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer eng.Close(context.WithoutCancel(ctx))
			rep, err := eng.Estimate(ctx, input, limit)
			if err != nil {
				return usageErr(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, rep)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "METRIC\tKIND\tJUDGE\tCASES\tCALLS\tCACHED\tIN TOKENS\tOUT TOKENS\tUSD\tBATCH USD\tNOTE")
			for _, m := range append(rep.Metrics, &rep.Total) {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t$%.4f\t$%.4f\t%s\n", m.Metric, m.Kind, dash(m.Judge),
					m.Cases, m.JudgeCalls, m.CachedCalls, m.InputTokens, m.OutputTokens, m.USD, m.BatchUSD, m.Note)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, n := range rep.Notes {
				fmt.Fprintln(out, "note:", n)
			}
			return nil
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&input, "input", "", "dataset; default from config")
	cmd.Flags().IntVar(&limit, "limit", 0, "estimate only the first N cases")
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

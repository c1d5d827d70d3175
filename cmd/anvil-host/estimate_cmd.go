package main

import (
	"context"
	"encoding/json"
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
request instead of sending it. Requests already in the cache (G-Eval steps
from an earlier run) count as cached and free. Output tokens are assumed
at 150 per uncached call unless a request caps them lower.`,
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
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "METRIC\tKIND\tJUDGE\tCASES\tCALLS\tCACHED\tIN TOKENS\tOUT TOKENS\tUSD\tNOTE")
			for _, m := range append(rep.Metrics, &rep.Total) {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t$%.4f\t%s\n", m.Metric, m.Kind, dash(m.Judge),
					m.Cases, m.JudgeCalls, m.CachedCalls, m.InputTokens, m.OutputTokens, m.USD, m.Note)
			}
			return tw.Flush()
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

func newValidateCmd() *cobra.Command {
	var lf loadFlags
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the config, plugins (digests, ABI) and DAGs without running anything",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, eng, err := lf.load(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer eng.Close(context.WithoutCancel(ctx))
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d metrics, config hash %s)\n", cfg.File, len(cfg.Metrics), eng.ConfigHash())
			return nil
		},
	}
	lf.register(cmd)
	return cmd
}

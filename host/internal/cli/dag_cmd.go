package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/results"
)

func newDAGCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dag", Short: "Work with DAG metrics"}
	var lf loadFlags
	var results, caseID string
	render := &cobra.Command{
		Use:   "render [METRIC]",
		Short: "Print a DAG metric as a Mermaid flowchart, optionally highlighting the path one case took",
		Long: `Print a DAG metric as a Mermaid flowchart: METRIC may be left out when the
config has one dag metric. With --results and --case, the path that case
took is highlighted.

` + configRuleHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, eng, err := lf.load(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer eng.Close(context.WithoutCancel(ctx))
			names := eng.DAGMetrics()
			var name string
			switch {
			case len(args) == 1:
				name = args[0]
			case len(names) == 1:
				name = names[0]
			default:
				return usageErr(fmt.Errorf("name the DAG metric to render (one of: %s)", strings.Join(names, ", ")))
			}
			g, ok := eng.Graph(name)
			if !ok {
				return usageErr(fmt.Errorf("%q is not a dag metric (dag metrics: %s)", name, strings.Join(names, ", ")))
			}
			var hl *dag.Result
			if caseID != "" {
				if results == "" {
					return usageErr(fmt.Errorf("--case needs --results (a results.jsonl)"))
				}
				if hl, err = findDAGResult(results, caseID, name); err != nil {
					return usageErr(err)
				}
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), dag.Render(g, hl))
			return err
		},
	}
	lf.register(render)
	render.Flags().StringVar(&results, "results", "", "results.jsonl of a run, to highlight a case's path")
	render.Flags().StringVar(&caseID, "case", "", "case id whose path to highlight")
	cmd.AddCommand(render)
	return cmd
}

// findDAGResult reads the dag result of one case from results.jsonl.
func findDAGResult(path, caseID, metric string) (*dag.Result, error) {
	var found *dag.Result
	errFound := errors.New("found")
	err := results.Each(path, func(cr *results.CaseResult) error {
		if cr.CaseID != caseID {
			return nil
		}
		for _, mr := range cr.Metrics {
			if mr.Metric != metric {
				continue
			}
			if len(mr.Details) == 0 {
				return fmt.Errorf("%s: case %q has no DAG details for %s (status %s)", path, caseID, metric, mr.Status)
			}
			var res dag.Result
			if err := json.Unmarshal(mr.Details, &res); err != nil {
				return fmt.Errorf("%s: case %q: DAG details: %w", path, caseID, err)
			}
			found = &res
			return errFound
		}
		return fmt.Errorf("%s: case %q has no result for metric %s", path, caseID, metric)
	})
	switch {
	case found != nil:
		return found, nil
	case err != nil:
		return nil, err
	}
	return nil, fmt.Errorf("%s: no case %q", path, caseID)
}

package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/engine"
	"github.com/agentanvil/anvil/host/store"
)

func newCacheCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cache", Short: "Inspect or clear the judge cache"}
	var path string
	open := func(cmd *cobra.Command) (*store.Store, error) {
		st, err := store.Open(cmd.Context(), path)
		if err != nil {
			return nil, usageErr(err)
		}
		return st, nil
	}
	stats := &cobra.Command{
		Use:   "stats",
		Short: "Entries, bytes and entries per model in the judge cache",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			s, err := st.Stats(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d entries, %d bytes\n", path, s.Entries, s.Bytes)
			models := make([]string, 0, len(s.ByModel))
			for m := range s.ByModel {
				models = append(models, m)
			}
			sort.Strings(models)
			for _, m := range models {
				fmt.Fprintf(out, "  %-30s %d\n", m, s.ByModel[m])
			}
			return nil
		},
	}
	clear := &cobra.Command{
		Use:   "clear",
		Short: "Remove every judge cache entry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.Clear(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: removed %d entries\n", path, n)
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&path, "store", engine.DefaultStore, "SQLite store path")
	cmd.AddCommand(stats, clear)
	return cmd
}

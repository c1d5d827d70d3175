package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/store"
)

const storeRuleHelp = `The store is --store as given; else defaults.store in the config (relative
to the config file); else .anvil/store.db in the config file's directory.`

// cacheStats is `cache stats --json`.
type cacheStats struct {
	Store   string           `json:"store"`
	Entries int64            `json:"entries"`
	Bytes   int64            `json:"bytes"`
	ByModel map[string]int64 `json:"by_model"`
}

func newCacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect, export or clear the judge cache",
		Long: "Inspect, export or clear the judge cache in the SQLite store.\n\n" + storeRuleHelp +
			"\n\n" + configRuleHelp + " With none of them, the store is .anvil/store.db in the\nworking directory.",
	}
	var configPath, storeFlag string
	var asJSON bool
	// storePath applies the one store rule to the config found by the one
	// discovery rule; with no config at all, the default store in the
	// working directory.
	storePath := func(cmd *cobra.Command) (string, error) {
		if storeFlag != "" {
			return storeFlag, nil
		}
		path, err := findConfig(configPath, os.Getenv)
		if errors.Is(err, errNoConfig) {
			return engine.StorePath(nil, ""), nil
		}
		if err != nil {
			return "", usageErr(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			return "", usageErr(err)
		}
		return engine.StorePath(cfg, ""), nil
	}
	// damaged gives an error of a store that opened the advice an
	// unreadable one gets, when the store's pages are what failed.
	damaged := func(err error) error {
		if store.IsCorrupt(err) {
			return &exitError{code: exitUnverified, err: fmt.Errorf("%w (`anvil-host cache clear` resets a damaged store)", err)}
		}
		return err
	}
	open := func(cmd *cobra.Command) (*store.Store, string, error) {
		path, err := storePath(cmd)
		if err != nil {
			return nil, "", err
		}
		st, err := store.Open(cmd.Context(), path)
		if err != nil {
			return nil, path, &exitError{code: exitUnverified, err: fmt.Errorf("%w (`anvil-host cache clear` resets an unreadable store)", err)}
		}
		return st, path, nil
	}
	stats := &cobra.Command{
		Use:   "stats",
		Short: "Entries, bytes and entries per model in the judge cache",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, path, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			s, err := st.Stats(cmd.Context())
			if err != nil {
				return damaged(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				byModel := s.ByModel
				if byModel == nil {
					byModel = map[string]int64{}
				}
				return writeJSON(out, cacheStats{Store: path, Entries: s.Entries, Bytes: s.Bytes, ByModel: byModel})
			}
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
		Short: "Remove every judge cache entry (and reset a store that cannot be read)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := storePath(cmd)
			if err != nil {
				return err
			}
			st, err := store.Open(cmd.Context(), path)
			if err != nil {
				// A corrupt store is exactly what clear is for.
				if rerr := store.Reset(path); rerr != nil {
					return &exitError{code: exitUnverified, err: fmt.Errorf("%v; %w", err, rerr)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: unreadable (%v); removed it\n", path, err)
				return nil
			}
			n, err := st.Clear(cmd.Context())
			st.Close()
			if err != nil && store.IsCorrupt(err) {
				// The header was intact, the pages are not: the file has
				// to go, as one that does not open at all.
				if rerr := store.Reset(path); rerr != nil {
					return &exitError{code: exitUnverified, err: fmt.Errorf("%v; %w", err, rerr)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: damaged (%v); removed it\n", path, err)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: removed %d entries\n", path, n)
			return nil
		},
	}
	stats.Flags().BoolVar(&asJSON, "json", false, "print the statistics as JSON")
	var note, outFile string
	export := &cobra.Command{
		Use:   "export",
		Short: "Write the judge cache as a recorded session (for judges.<name>.offline_recording)",
		Long: `Write every judge cache entry as a recorded judge session: JSONL, a header
line carrying --note, then one reply a line in key order. A config whose
judge names the file in offline_recording replays it when the judge has no
API key, and says so in its output.

Record a session: run with a fresh --store against the judge to record, then
export that store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if note == "" {
				return usageErr(errors.New("--note is required: say what answered the requests (a model and date, or a fake server)"))
			}
			st, _, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			var w io.Writer = cmd.OutOrStdout()
			if outFile != "" {
				f, err := os.Create(outFile)
				if err != nil {
					return &exitError{code: exitUnverified, err: err}
				}
				defer f.Close()
				w = f
			}
			n, err := engine.ExportRecording(cmd.Context(), st, note, w)
			if err != nil {
				if de := damaged(err); de != err {
					return de
				}
				return &exitError{code: exitUnverified, err: err}
			}
			if outFile != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d replies\n", outFile, n)
			}
			return nil
		},
	}
	export.Flags().StringVar(&note, "note", "", "what answered the recorded requests (shown by every run that replays it)")
	export.Flags().StringVarP(&outFile, "output", "o", "", "write to this file instead of stdout")
	registerConfigFlag(cmd, true, &configPath)
	cmd.PersistentFlags().StringVar(&storeFlag, "store", "", "SQLite store path (overrides the config)")
	cmd.AddCommand(stats, clear, export)
	return cmd
}

package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/lockfile"
	"github.com/agentanvil/anvil/host/internal/pluginsource"
)

func newLockCmd() *cobra.Command {
	var configFlag string
	var update bool
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Resolve every oci:// plugin to a digest and write anvil.lock",
		Long: `Resolve every plugin the config names by oci:// reference to its manifest
digest, pull manifest, module and signatures into the plugin cache, check
the trust policy, and write anvil.lock beside the config: for each plugin
the manifest digest, size and media type, the module's digest, size and
media type, ABI version, kinds, capabilities asked and signer.

run and validate load such plugins only as the lock pins them, from the
cache when it holds them — so a locked, pulled plugin runs with the
registry down. A tag that has moved since the lock was written is an
error naming the old and the new digest, here and in run; --update
accepts the new digests.

Exit codes: 0 written; 2 config error, trust policy refusal or a moved tag
(nothing written); 3 the registry or the cache failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := findConfig(configFlag, os.Getenv)
			if err != nil {
				return usageErr(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				return usageErr(err)
			}
			policy, err := pluginsource.Policy(cfg)
			if err != nil {
				return usageErr(err)
			}
			lockPath := lockfile.Path(cfg.File)
			old, err := lockfile.Read(lockPath)
			switch {
			case errors.Is(err, os.ErrNotExist):
				old = nil
			case err != nil && !update:
				return usageErr(err)
			case err != nil:
				old = nil // --update rewrites a broken lock
			}
			client, err := newRegistryClient(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cache, err := openPluginCache()
			if err != nil {
				return err
			}
			src := &pluginsource.Source{Client: client, Cache: cache,
				Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
			l, locked, err := src.Lock(cmd.Context(), cfg, old, update, policy)
			if err != nil {
				return usageErr(err)
			}
			if err := lockfile.Write(lockPath, l); err != nil {
				return registryErr(err)
			}
			out := cmd.OutOrStdout()
			for _, p := range locked {
				change := "locked"
				switch {
				case p.Previous == p.Digest:
					change = "unchanged"
				case p.Previous != "":
					change = "updated from " + p.Previous
				}
				fmt.Fprintf(out, "%s: %s@%s signer %s (%s)\n", p.Name, p.Ref, p.Digest, p.Signer, change)
			}
			fmt.Fprintf(out, "wrote %s (%d plugin(s))\n", lockPath, len(locked))
			return nil
		},
	}
	registerConfigFlag(cmd, false, &configFlag)
	cmd.Flags().BoolVar(&update, "update", false, "accept tags that moved since the lock was written (and rewrite a lock that does not parse)")
	return cmd
}

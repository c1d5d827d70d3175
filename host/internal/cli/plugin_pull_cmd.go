package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/pluginconfig"
)

func newPluginPullCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pull oci://REGISTRY/REPO:TAG|@sha256:…",
		Short: "Download a plugin and its signatures into the local plugin cache",
		Long: `Resolve the reference, check the manifest (media types, one layer, the
descriptor annotations), download the module bounded by the default
max_module_bytes and verified against its digest, and store manifest,
module and signature referrers in the content-addressed plugin cache
($ANVIL_PLUGIN_CACHE, else $XDG_CACHE_HOME/anvil/plugins). Prints the
pinned reference and the cached module's path. Runs use the cache, so a
pulled and locked plugin runs without the registry.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseRefArg(args[0], true)
			if err != nil {
				return err
			}
			client, err := newRegistryClient(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cache, err := openPluginCache()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			f, err := client.FetchPlugin(ctx, ref)
			if err != nil {
				return registryErr(err)
			}
			pinned := ref.WithDigest(f.Manifest.Digest.String())
			b, err := client.FetchLayer(ctx, pinned, f.Plugin, pluginconfig.DefaultLimits.MaxModuleBytes)
			if err != nil {
				return registryErr(err)
			}
			sigs, err := client.Signatures(ctx, pinned, f.Manifest)
			if err != nil {
				return registryErr(err)
			}
			for _, blob := range [][]byte{f.ConfigRaw, f.ManifestRaw} {
				if _, err := cache.Put(blob, false); err != nil {
					return registryErr(err)
				}
			}
			if _, err := cache.Put(b, f.Transport == oci.TransportProcess); err != nil {
				return registryErr(err)
			}
			if err := cache.PutSignatures(f.Manifest.Digest.String(), sigs); err != nil {
				return registryErr(err)
			}
			path, _ := cache.Path(f.Layer.Digest.String())
			fmt.Fprintf(cmd.OutOrStdout(), "pulled %s (%s %s@%s, capabilities %s, %d signature(s))\nmodule %s\n",
				pinned, f.Transport, f.Summary.Name, f.Summary.Version, capsText(f.Summary.Capabilities), len(sigs), path)
			return nil
		},
	}
}

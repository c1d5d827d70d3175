package cli

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/plugincache"
	"github.com/agentanvil/anvil/host/internal/pluginconfig"
)

// registryErr is a registry or cache failure: exit 3 (could not verify).
func registryErr(err error) error { return &exitError{code: exitUnverified, err: err} }

func parseRefArg(arg string, requireTarget bool) (oci.Ref, error) {
	r, err := oci.ParseRef(arg, requireTarget)
	if err != nil {
		return oci.Ref{}, usageErr(err)
	}
	return r, nil
}

func openPluginCache() (*plugincache.Cache, error) {
	dir, err := plugincache.DefaultDir(os.Getenv)
	if err != nil {
		return nil, registryErr(err)
	}
	c, err := plugincache.Open(dir)
	if err != nil {
		return nil, registryErr(err)
	}
	return c, nil
}

func newRegistryClient() (*oci.Client, error) {
	c, err := oci.NewClient()
	if err != nil {
		return nil, usageErr(err)
	}
	return c, nil
}

func newPluginPushCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "push PATH oci://REGISTRY/REPO:TAG",
		Short: "Publish a plugin to an OCI registry",
		Long: `Describe the plugin at PATH (a Wasm module, or a native process plugin)
and push it to an OCI registry: a Wasm module as the CNCF TAG Runtime Wasm
artifact (config application/vnd.wasm.config.v0+json, wasm/wasip1, one
application/wasm layer), a native plugin as an Anvil process artifact for
this machine's os/arch. The descriptor summary — name, version, ABI
version, kinds and capabilities asked — goes into the manifest's
annotations, where ` + "`plugin ls`" + `, ` + "`lock`" + ` and the trust policy read it; a
host that runs the plugin re-reads the real descriptor and refuses the
plugin when they differ.

Credentials come from the docker config ($DOCKER_CONFIG or
~/.docker/config.json) and its credential helpers; plain HTTP is used only
for a registry on a loopback address. Pushing is reproducible: the same
module gives the same manifest digest. Prints the pinned reference.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseRefArg(args[1], true)
			if err != nil {
				return err
			}
			if ref.Tag == "" || ref.Digest != "" {
				return usageErr(fmt.Errorf("plugin push: %s: push to a tag (oci://REGISTRY/REPO:TAG), not a digest", args[1]))
			}
			a, err := artifactOf(cmd.Context(), args[0])
			if err != nil {
				return verifyFailed(cmd.ErrOrStderr(), err)
			}
			client, err := newRegistryClient()
			if err != nil {
				return err
			}
			desc, err := client.Push(cmd.Context(), ref, a)
			if err != nil {
				return registryErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s (%s %s@%s, kinds %s, capabilities %s)\n", ref.WithDigest(desc.Digest.String()),
				a.Transport, a.Summary.Name, a.Summary.Version, strings.Join(a.Summary.Kinds, ","), capsText(a.Summary.Capabilities))
			return nil
		},
	}
}

// artifactOf describes the plugin at path and reads it whole.
func artifactOf(ctx context.Context, path string) (oci.Artifact, error) {
	native, err := isNative(path)
	if err != nil {
		return oci.Artifact{}, err
	}
	digest := ""
	transport := oci.TransportWasm
	if native {
		// A publisher pushing its own executable: describing it means
		// running it, pinned to the bytes that will be pushed.
		if digest, err = plugin.FileDigest(path); err != nil {
			return oci.Artifact{}, err
		}
		transport = oci.TransportProcess
	}
	info, _, err := describePlugin(ctx, path, digest)
	if err != nil {
		return oci.Artifact{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return oci.Artifact{}, err
	}
	if max := pluginconfig.DefaultLimits.MaxModuleBytes; st.Size() > max {
		return oci.Artifact{}, fmt.Errorf("%s: %d bytes is above the default max_module_bytes %d", path, st.Size(), max)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return oci.Artifact{}, err
	}
	if got := oci.DigestOf(b); got != info.Digest {
		return oci.Artifact{}, fmt.Errorf("%s changed while it was described (%s, now %s)", path, info.Digest, got)
	}
	return oci.Artifact{Module: b, Transport: transport, Summary: oci.SummaryOf(info.Descriptor)}, nil
}

func capsText(cs []string) string {
	if len(cs) == 0 {
		return "none"
	}
	return strings.Join(cs, ",")
}

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
			client, err := newRegistryClient()
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

// referrersTag is a tag of the OCI referrers tag schema (sha256-<hex>),
// which registries without the referrers API hold signatures under.
var referrersTag = regexp.MustCompile(`^sha256-[0-9a-f]{64}$`)

func newPluginLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls oci://REGISTRY/REPO",
		Short: "List a repository's plugin tags with their kinds and capabilities",
		Long: `List every tag of the repository with its manifest digest, transport,
ABI version, kinds and the capabilities it asks for — read from the
manifests' annotations, without downloading any module. A tag that is not
a plugin artifact is listed with why.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseRefArg(args[0], false)
			if err != nil {
				return err
			}
			client, err := newRegistryClient()
			if err != nil {
				return err
			}
			tags, err := client.Tags(cmd.Context(), ref)
			if err != nil {
				return registryErr(err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TAG\tDIGEST\tTRANSPORT\tABI\tKINDS\tCAPABILITIES")
			for _, t := range tags {
				if referrersTag.MatchString(t) {
					continue // the referrers tag schema's index, not a plugin
				}
				r := ref
				r.Tag, r.Digest = t, ""
				f, err := client.FetchPlugin(cmd.Context(), r)
				if err != nil {
					fmt.Fprintf(tw, "%s\t-\t-\t-\tnot a plugin: %v\t-\n", t, err)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t, f.Manifest.Digest, f.Transport, f.Summary.ABI,
					strings.Join(f.Summary.Kinds, ","), capsText(f.Summary.Capabilities))
			}
			return tw.Flush()
		},
	}
}

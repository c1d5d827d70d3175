package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

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

// newRegistryClient is the registry client of the plugin commands; what
// it tolerates rather than fails (a registry refusing to delete an old
// referrers index) is a warning on stderr.
func newRegistryClient(stderr io.Writer) (*oci.Client, error) {
	c, err := oci.NewClient()
	if err != nil {
		return nil, usageErr(err)
	}
	c.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
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
			client, err := newRegistryClient(cmd.ErrOrStderr())
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

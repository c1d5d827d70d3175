package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/trust"
)

func newPluginKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen NAME",
		Short: "Create an ed25519 key pair for signing plugins (NAME.key, NAME.pub)",
		Long: `Write a new ed25519 key pair: NAME.key (PKCS#8 PEM, mode 0600: keep it
secret, it signs) and NAME.pub (PKIX PEM: give it to the teams that run your
plugins; their trust.publishers entry names it). Existing files are never
overwritten. Prints the key id, which signatures and anvil.lock name.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := trust.GenerateKeyPair(args[0])
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "key %s: private %s.key, public %s.pub\n", id, args[0], args[0])
			return nil
		},
	}
}

func newPluginSignCmd() *cobra.Command {
	var keyPath string
	cmd := &cobra.Command{
		Use:   "sign --key NAME.key oci://REGISTRY/REPO:TAG|PATH",
		Short: "Sign a pushed plugin (an OCI referrer) or a local module (PATH.sig)",
		Long: `Sign a plugin with an ed25519 private key. For an oci:// reference the
manifest digest is signed — it names the module layer and the descriptor
annotations, so both are covered — and the signature is pushed as a
referrer of the manifest (artifact type
application/vnd.anvil.plugin.signature.v1+json). For a local PATH the
module's sha256 is signed and the signature written beside it as PATH.sig.
Prints what was signed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyPath == "" {
				return usageErr(errors.New("plugin sign: --key NAME.key is required (`anvil-host plugin keygen NAME` makes one)"))
			}
			priv, err := trust.LoadPrivateKey(keyPath)
			if err != nil {
				return usageErr(err)
			}
			target := args[0]
			if !strings.HasPrefix(target, oci.Scheme) {
				d, err := plugin.FileDigest(target)
				if err != nil {
					return usageErr(err)
				}
				sig, err := trust.Sign(priv, d)
				if err != nil {
					return usageErr(err)
				}
				if err := os.WriteFile(trust.SidecarPath(target), append(sig, '\n'), 0o644); err != nil {
					return registryErr(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "signed %s (%s) with %s: %s\n", target, d, trust.PrivateKeyID(priv), trust.SidecarPath(target))
				return nil
			}
			ref, err := parseRefArg(target, true)
			if err != nil {
				return err
			}
			client, err := newRegistryClient(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			f, err := client.FetchPlugin(cmd.Context(), ref)
			if err != nil {
				return registryErr(err)
			}
			sig, err := trust.Sign(priv, f.Manifest.Digest.String())
			if err != nil {
				return usageErr(err)
			}
			pinned := ref.WithDigest(f.Manifest.Digest.String())
			if _, err := client.PushSignature(cmd.Context(), pinned, f.Manifest, sig); err != nil {
				return registryErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed %s with %s (signature pushed as a referrer)\n", pinned, trust.PrivateKeyID(priv))
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "the ed25519 private key (PEM) to sign with")
	return cmd
}

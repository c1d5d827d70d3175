package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/pluginconfig"
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
			client, err := newRegistryClient()
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

// verifySignature checks that the plugin at target (a local PATH with its
// PATH.sig, or an oci:// reference with its signature referrers) is signed
// by one of keys, then that it is a loadable plugin — for a reference,
// one whose module's descriptor matches its manifest's annotations. It
// returns the line to print.
func verifySignature(ctx context.Context, target, pinned string, keyPaths []string) (string, error) {
	policy := &trust.Policy{RequireAll: true}
	for _, k := range keyPaths {
		pub, err := trust.LoadPublicKey(k)
		if err != nil {
			return "", usageErr(err)
		}
		policy.Publishers = append(policy.Publishers, trust.Publisher{Name: k, Key: pub})
	}
	if !strings.HasPrefix(target, oci.Scheme) {
		digest := pinned
		if digest == "" {
			d, err := plugin.FileDigest(target)
			if err != nil {
				return "", err
			}
			digest = d
		}
		sigs, err := trust.ReadSidecar(target)
		if err != nil {
			return "", err
		}
		dec, err := policy.Check(trust.Subject{Plugin: target, Digest: canonicalDigest(digest), Signatures: sigs})
		if err != nil {
			return "", err
		}
		info, _, err := describePlugin(ctx, target, digest)
		if err != nil {
			return "", err
		}
		d := info.Descriptor
		return fmt.Sprintf("ok %s %s@%s ABI v%d.%d signed by %s", info.Digest, d.Name, d.Version, d.ABIMajor, d.ABIMinor, dec.KeyID), nil
	}
	ref, err := parseRefArg(target, true)
	if err != nil {
		return "", err
	}
	client, err := newRegistryClient()
	if err != nil {
		return "", err
	}
	f, err := client.FetchPlugin(ctx, ref)
	if err != nil {
		return "", err
	}
	at := ref.WithDigest(f.Manifest.Digest.String())
	sigs, err := client.Signatures(ctx, at, f.Manifest)
	if err != nil {
		return "", err
	}
	dec, err := policy.Check(trust.Subject{Plugin: at.String(), Digest: f.Manifest.Digest.String(), Signatures: sigs})
	if err != nil {
		return "", err
	}
	module, err := client.FetchLayer(ctx, at, f.Plugin, pluginconfig.DefaultLimits.MaxModuleBytes)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp("", "anvil-verify-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(module)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && f.Transport == oci.TransportProcess {
		err = os.Chmod(tmp.Name(), 0o700)
	}
	if err != nil {
		return "", err
	}
	info, _, err := describePlugin(ctx, tmp.Name(), f.Layer.Digest.String())
	if err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	if err := f.Summary.Check(info.Descriptor); err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	d := info.Descriptor
	return fmt.Sprintf("ok %s %s@%s ABI v%d.%d module %s signed by %s", at, d.Name, d.Version, d.ABIMajor, d.ABIMinor, info.Digest, dec.KeyID), nil
}

// canonicalDigest is "sha256:<lower hex>" of a digest given with or
// without the prefix.
func canonicalDigest(d string) string {
	return "sha256:" + strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d)), "sha256:")
}

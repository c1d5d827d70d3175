package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/pluginconfig"
	"github.com/agentanvil/anvil/host/internal/trust"
)

// verifySignature checks that the plugin at target (a local PATH with its
// PATH.sig, or an oci:// reference with its signature referrers) is signed
// by one of keys, then that it is a loadable plugin — for a reference,
// one whose module's descriptor matches its manifest's annotations. It
// returns the line to print.
func verifySignature(ctx context.Context, stderr io.Writer, target, pinned string, keyPaths []string) (string, error) {
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
	client, err := newRegistryClient(stderr)
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

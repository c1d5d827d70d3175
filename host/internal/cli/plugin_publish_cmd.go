package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/conformance"
	"github.com/agentanvil/anvil/host/internal/oci"
	"github.com/agentanvil/anvil/host/internal/trust"
)

func newPluginPublishCmd() *cobra.Command {
	var kit kitFlags
	var keyPath string
	cmd := &cobra.Command{
		Use:   "publish PATH oci://REGISTRY/REPO:TAG --key NAME.key",
		Short: "Test, push and sign a plugin, attaching its signed conformance result",
		Long: `Publish the plugin at PATH in one step: run the conformance kit on it (as
` + "`plugin test`" + ` does, with the same flags); if no check failed, push it
(as ` + "`plugin push`" + `), sign its manifest (as ` + "`plugin sign`" + `), and attach the
kit's report as a conformance attestation — a referrer of the manifest
(artifact type application/vnd.anvil.plugin.conformance.v1+json) holding
every check, the descriptor and the host version that ran the kit —
signed with the same key. A host whose trust policy says
require_conformance: true loads the plugin only with such an attestation
signed by a trusted publisher. ` + "`plugin info`" + ` and ` + "`plugin search`" + ` show it.

Nothing is pushed when a check fails (exit 1, the failed checks named).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			ref, err := parseRefArg(args[1], true)
			if err != nil {
				return err
			}
			if ref.Tag == "" || ref.Digest != "" {
				return usageErr(fmt.Errorf("plugin publish: %s: publish to a tag (oci://REGISTRY/REPO:TAG), not a digest", args[1]))
			}
			if keyPath == "" {
				return usageErr(errors.New("plugin publish: --key NAME.key is required (`anvil-host plugin keygen NAME` makes one)"))
			}
			priv, err := trust.LoadPrivateKey(keyPath)
			if err != nil {
				return usageErr(err)
			}
			rep, note, err := kit.run(cmd, path, "plugin publish")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if note != "" {
				fmt.Fprintln(out, note)
			}
			if !rep.OK() {
				if err := conformance.WriteText(out, rep); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "anvil-host: plugin publish: nothing pushed: %d check(s) failed: %s\n", rep.Failed, strings.Join(failedChecks(rep), ", "))
				return &exitError{code: exitConformanceFailed}
			}
			a, err := artifactOf(cmd.Context(), path)
			if err != nil {
				return verifyFailed(cmd.ErrOrStderr(), err)
			}
			if got := oci.DigestOf(a.Module); got != rep.Digest {
				return verifyFailed(cmd.ErrOrStderr(), fmt.Errorf("%s changed after the kit ran (%s, now %s): nothing pushed", path, rep.Digest, got))
			}
			client, err := newRegistryClient(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			desc, err := client.Push(ctx, ref, a)
			if err != nil {
				return registryErr(err)
			}
			pinned := ref.WithDigest(desc.Digest.String())
			sig, err := trust.Sign(priv, desc.Digest.String())
			if err != nil {
				return usageErr(err)
			}
			if _, err := client.PushSignature(ctx, pinned, desc, sig); err != nil {
				return registryErr(err)
			}
			att, err := conformance.Attest(rep, desc.Digest.String(), hostVersion())
			if err != nil {
				return verifyFailed(cmd.ErrOrStderr(), err)
			}
			doc, err := att.Marshal()
			if err != nil {
				return err
			}
			attDesc, err := client.PushConformance(ctx, pinned, desc, doc)
			if err != nil {
				return registryErr(err)
			}
			attSig, err := trust.Sign(priv, attDesc.Digest.String())
			if err != nil {
				return usageErr(err)
			}
			if _, err := client.PushSignature(ctx, pinned, attDesc, attSig); err != nil {
				return registryErr(err)
			}
			fmt.Fprintf(out, "published %s (%s %s@%s, kinds %s, capabilities %s)\n", pinned,
				a.Transport, a.Summary.Name, a.Summary.Version, strings.Join(a.Summary.Kinds, ","), capsText(a.Summary.Capabilities))
			fmt.Fprintf(out, "signed by %s; conformance %s, attested as %s\n", trust.PrivateKeyID(priv), att.Summary(), attDesc.Digest)
			return nil
		},
	}
	kit.register(cmd.Flags())
	cmd.Flags().StringVar(&keyPath, "key", "", "the ed25519 private key (PEM) to sign the plugin and its attestation with")
	return cmd
}

// hostVersion names this binary in an attestation: its module version,
// with the commit when the version does not say it.
func hostVersion() string {
	v := buildVersion(readBuildInfo())
	if v.Version == "(devel)" && v.Commit != "" {
		return v.Version + " " + v.Commit
	}
	return v.Version
}

// publishers are the trusted publishers of the config found as the other
// commands find it (-c/--from, $ANVIL_CONFIG, ./anvil.yaml); none when
// there is no config, or it has no trust section. Key ids are what
// identify a signer; a publisher's name is the operator's word for one.
func publishers(from string) (map[string]trusted, error) {
	path, err := findConfig(from, os.Getenv)
	if errors.Is(err, errNoConfig) && from == "" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	keys := map[string]trusted{}
	for name, pc := range cfg.Trust.Publishers {
		key, err := trust.LoadPublicKey(cfg.Resolve(pc.Key))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: trust.publishers.%s: %w", cfg.File, pc.Line, name, err)
		}
		keys[key.ID] = trusted{name: name, key: key}
	}
	return keys, nil
}

// trusted is a trusted publisher's name and key.
type trusted struct {
	name string
	key  trust.PublicKey
}

// facts is what a registry says of one plugin: its manifest's summary, who
// signed it, and its conformance attestations with who signed each.
type facts struct {
	Ref          string        `json:"ref"`
	Digest       string        `json:"digest"`
	Transport    string        `json:"transport"`
	Summary      oci.Summary   `json:"summary"`
	Signers      []signer      `json:"signers"`
	Attestations []attestation `json:"attestations"`
}

// signer is a signature's key and, when the config trusts that key, its
// publisher's name and whether the signature verifies.
type signer struct {
	KeyID     string `json:"key_id"`
	Publisher string `json:"publisher,omitempty"`
	Verified  bool   `json:"verified"`
}

type attestation struct {
	Digest  string                   `json:"digest"`
	Passed  bool                     `json:"passed"`
	Summary string                   `json:"summary"`
	Signers []signer                 `json:"signers"`
	Report  *conformance.Attestation `json:"report,omitempty"`
}

// gather reads the facts of the plugin ref names.
func gather(ctx context.Context, client *oci.Client, ref oci.Ref, keys map[string]trusted) (*facts, error) {
	f, err := client.FetchPlugin(ctx, ref)
	if err != nil {
		return nil, err
	}
	pinned := ref.WithDigest(f.Manifest.Digest.String())
	out := &facts{Ref: pinned.String(), Digest: f.Manifest.Digest.String(), Transport: f.Transport, Summary: f.Summary}
	sigs, err := client.Signatures(ctx, pinned, f.Manifest)
	if err != nil {
		return nil, err
	}
	out.Signers = signersOf(sigs, out.Digest, keys)
	refs, err := client.Conformance(ctx, pinned, f.Manifest)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		a := attestation{Digest: r.Manifest.Digest.String()}
		rep, err := conformance.ParseAttestation(r.Doc)
		switch {
		case err != nil:
			a.Summary = "unreadable: " + err.Error()
		case rep.Subject != out.Digest || rep.Module != f.Layer.Digest.String():
			a.Summary = fmt.Sprintf("about another artifact (manifest %s, module %s)", rep.Subject, rep.Module)
		default:
			a.Passed, a.Summary, a.Report = rep.OK(), rep.Summary(), &rep
		}
		asigs, err := client.Signatures(ctx, pinned, r.Manifest)
		if err != nil {
			return nil, err
		}
		a.Signers = signersOf(asigs, a.Digest, keys)
		out.Attestations = append(out.Attestations, a)
	}
	return out, nil
}

// signersOf reads signature documents of digest. Whether a signature
// verifies is known only for a trusted publisher's key: for any other the
// key is only what the document claims.
func signersOf(sigs [][]byte, digest string, keys map[string]trusted) []signer {
	var out []signer
	for _, raw := range sigs {
		s, err := trust.ParseSignature(raw)
		if err != nil || s.Subject != digest {
			continue
		}
		si := signer{KeyID: s.KeyID}
		if t, ok := keys[s.KeyID]; ok {
			si.Publisher, si.Verified = t.name, s.Verify(t.key, digest)
		}
		out = append(out, si)
	}
	return out
}

// attested is the best conformance claim of f in a few words.
func (f *facts) attested() string {
	best := "none"
	for _, a := range f.Attestations {
		switch {
		case a.Passed && verified(a.Signers):
			return "passed, attested by " + signersText(a.Signers)
		case a.Passed && best != "passed, unverified":
			best = "passed, unverified"
		case !a.Passed && best == "none":
			best = "failed"
		}
	}
	return best
}

func verified(ss []signer) bool {
	for _, s := range ss {
		if s.Verified {
			return true
		}
	}
	return false
}

func signersText(ss []signer) string {
	if len(ss) == 0 {
		return "unsigned"
	}
	var parts []string
	for _, s := range ss {
		switch {
		case s.Verified:
			parts = append(parts, s.Publisher+" ("+s.KeyID+")")
		case s.Publisher != "":
			parts = append(parts, s.KeyID+" (claims "+s.Publisher+"'s key, does not verify)")
		default:
			parts = append(parts, s.KeyID+" (not a trusted publisher)")
		}
	}
	return strings.Join(parts, ", ")
}

func newPluginInfoCmd() *cobra.Command {
	var from string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info oci://REGISTRY/REPO:TAG|@sha256:…",
		Short: "Show a published plugin: kinds, params, capabilities, signers, conformance",
		Long: `Show what a registry holds of one plugin without running it: the manifest
digest, transport, ABI, kinds and the capabilities it asks for (from the
manifest); each kind's description and params schema (from its
conformance attestation, which holds the descriptor the kit read); who
signed it, and each conformance attestation with its counts and who
signed it. A signer is named by its key id, and by its publisher's name
with "verified" when the config (-c/--from, $ANVIL_CONFIG, ./anvil.yaml)
trusts that key and the signature verifies.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseRefArg(args[0], true)
			if err != nil {
				return err
			}
			keys, err := publishers(from)
			if err != nil {
				return usageErr(fmt.Errorf("plugin info: %w", err))
			}
			client, err := newRegistryClient(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			f, err := gather(cmd.Context(), client, ref, keys)
			if err != nil {
				return registryErr(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, f)
			}
			fmt.Fprintln(out, f.Ref)
			fmt.Fprintf(out, "  plugin        %s %s (%s, ABI %s)\n", f.Summary.Name, f.Summary.Version, f.Transport, f.Summary.ABI)
			fmt.Fprintf(out, "  capabilities  %s\n", capsText(f.Summary.Capabilities))
			fmt.Fprintf(out, "  signed by     %s\n", signersText(f.Signers))
			if len(f.Attestations) == 0 {
				fmt.Fprintln(out, "  conformance   none attached (`plugin publish` attaches one)")
			}
			for _, a := range f.Attestations {
				verdict := "FAILED"
				if a.Passed {
					verdict = "passed"
				}
				fmt.Fprintf(out, "  conformance   %s: %s; signed by %s (%s)\n", verdict, a.Summary, signersText(a.Signers), a.Digest)
			}
			desc := f.descriptor()
			fmt.Fprintln(out, "  kinds")
			for _, k := range f.Summary.Kinds {
				line := "    " + k
				if kd, ok := desc[k]; ok {
					if kd.Description != "" {
						line += ": " + kd.Description
					}
					if len(kd.ConfigSchema) > 0 {
						line += "\n      params " + string(kd.ConfigSchema)
					}
				}
				fmt.Fprintln(out, line)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the config whose trust.publishers name the signers (default: $ANVIL_CONFIG, else ./anvil.yaml if present)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// descriptor is the kinds as the best attestation's descriptor has them
// (a verified passing one first); empty when none reads.
func (f *facts) descriptor() map[string]abi.KindDescriptor {
	out := map[string]abi.KindDescriptor{}
	var best *conformance.Attestation
	for _, a := range f.Attestations {
		if a.Report != nil && (best == nil || a.Passed && verified(a.Signers)) {
			best = a.Report
		}
	}
	if best != nil {
		for _, k := range best.Descriptor.Kinds {
			out[string(k.Role)+"/"+k.Name] = k // as the manifest's summary names kinds
		}
	}
	return out
}

func newPluginSearchCmd() *cobra.Command {
	var from, registry string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search [QUERY] --registry oci://REGISTRY",
		Short: "List the plugins a registry holds, with kinds, signers and conformance",
		Long: `List every plugin tag in the registry's repositories (its catalog) whose
repository, plugin name, kinds or kind descriptions contain QUERY (any
case; every plugin without one): reference, plugin and version, kinds, ABI,
capabilities asked, who signed it and whether a signed conformance
attestation says it passed. Signers are named as ` + "`plugin info`" + ` names
them. Reads manifests, signatures and attestations; downloads no module.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if registry == "" {
				return usageErr(errors.New("plugin search: --registry oci://REGISTRY is required"))
			}
			reg, err := oci.ParseRegistry(registry)
			if err != nil {
				return usageErr(err)
			}
			query := ""
			if len(args) == 1 {
				query = strings.ToLower(args[0])
			}
			keys, err := publishers(from)
			if err != nil {
				return usageErr(fmt.Errorf("plugin search: %w", err))
			}
			client, err := newRegistryClient(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			repos, err := client.Repositories(ctx, reg)
			if err != nil {
				return registryErr(err)
			}
			found := []*facts{}
			for _, repo := range repos {
				r := reg
				r.Repository = repo
				tags, err := client.Tags(ctx, r)
				if err != nil {
					return registryErr(err)
				}
				for _, t := range tags {
					if referrersTag.MatchString(t) {
						continue
					}
					r.Tag = t
					f, err := gather(ctx, client, r, keys)
					if err != nil {
						continue // not a plugin artifact: a search lists plugins
					}
					if query == "" || strings.Contains(strings.ToLower(f.searchText(repo)), query) {
						f.Ref = r.String() + "@" + f.Digest
						found = append(found, f)
					}
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, found)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REFERENCE\tPLUGIN\tKINDS\tABI\tCAPABILITIES\tSIGNED BY\tCONFORMANCE\tDESCRIPTION")
			for _, f := range found {
				fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.SplitN(f.Ref, "@", 2)[0], f.Summary.Name, f.Summary.Version,
					strings.Join(f.Summary.Kinds, ","), f.Summary.ABI, capsText(f.Summary.Capabilities), signersText(f.Signers), f.attested(), f.description())
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(found) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no plugin matches")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&registry, "registry", "", "the registry to search, oci://HOST[:PORT]")
	cmd.Flags().StringVar(&from, "from", "", "the config whose trust.publishers name the signers (default: $ANVIL_CONFIG, else ./anvil.yaml if present)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// description is the first kind's description, cut to a table cell:
// "-" when no attestation carries the descriptor.
func (f *facts) description() string {
	desc := f.descriptor()
	for _, k := range f.Summary.Kinds {
		if d := desc[k].Description; d != "" {
			if r := []rune(d); len(r) > 60 {
				return string(r[:59]) + "…"
			}
			return d
		}
	}
	return "-"
}

// searchText is what a query is matched against.
func (f *facts) searchText(repo string) string {
	parts := []string{repo, f.Summary.Name}
	parts = append(parts, f.Summary.Kinds...)
	for _, k := range f.descriptor() {
		parts = append(parts, k.Description)
	}
	return strings.Join(parts, "\n")
}

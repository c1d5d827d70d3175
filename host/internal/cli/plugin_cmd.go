package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/plugin"
)

// exitVerifyFailed is the exit code of a plugin that fails verification
// (digest mismatch, or not a loadable ABI v1 plugin).
const exitVerifyFailed = 1

func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Inspect, verify, publish and sign plugins (Wasm modules and native process plugins)",
	}
	cmd.AddCommand(newPluginInspectCmd(), newPluginVerifyCmd(), newPluginTestCmd(), newPluginCallCmd(), newPluginNewCmd(),
		newPluginPushCmd(), newPluginPullCmd(), newPluginLsCmd(), newPluginKeygenCmd(), newPluginSignCmd(),
		newPluginPublishCmd(), newPluginInfoCmd(), newPluginSearchCmd())
	return cmd
}

func newPluginInspectCmd() *cobra.Command {
	var digest string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Print a plugin's descriptor and sha256 digest",
		Long: `Load a plugin in its sandbox, ask it to describe itself and print
what it offers and needs: name, version, ABI version, digest, capabilities
asked for, and each kind with its role, the test-case fields it needs, its
verdicts and a summary of its config schema. For a native process plugin,
also the OS isolation this machine's kernel gave it.

Without --sha256 a Wasm module is loaded unverified, only to describe it:
this is how you learn the digest to pin in the config. With --sha256 the
digest is checked first and a mismatch exits 1 without compiling or running
anything. A file that is not a Wasm module is a native process plugin:
describing it means running it, so it needs --sha256 (sha256sum prints it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, verified, err := describePlugin(cmd.Context(), args[0], digest)
			if err != nil {
				return verifyFailed(cmd.ErrOrStderr(), err)
			}
			if asJSON {
				return writeInspectJSON(cmd.OutOrStdout(), info, verified)
			}
			return writeInspect(cmd.OutOrStdout(), info, verified)
		},
	}
	cmd.Flags().StringVar(&digest, "sha256", "", "verify the module against this digest (hex, optionally sha256:-prefixed)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

func newPluginVerifyCmd() *cobra.Command {
	var digest string
	var keys []string
	cmd := &cobra.Command{
		Use:   "verify PATH --sha256 HEX | PATH --key NAME.pub | oci://REGISTRY/REPO:TAG --key NAME.pub",
		Short: "Check a plugin against its pinned digest or its signature, and the ABI",
		Long: `With --sha256: check that the module at PATH has that digest (before
compiling anything) and that it is a loadable ABI v1 plugin: marker export,
required exports and a consistent descriptor.

With --key (repeatable): check that the plugin is signed by one of those
ed25519 public keys — a local PATH by its PATH.sig sidecar (over the
module's digest, or --sha256 when given), an oci:// reference by its
signature referrers (over the manifest digest) — and then that it is a
loadable plugin; for a reference, also that the module's own descriptor
matches the manifest's annotations (kinds, ABI, capabilities).

Exit 0 when it is, 1 when it is not.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(keys) > 0 {
				line, err := verifySignature(cmd.Context(), cmd.ErrOrStderr(), args[0], digest, keys)
				if err != nil {
					var ee *exitError
					if errors.As(err, &ee) {
						return err
					}
					return verifyFailed(cmd.ErrOrStderr(), err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), line)
				return nil
			}
			if strings.HasPrefix(args[0], "oci://") {
				return usageErr(errors.New("plugin verify: a reference is verified by its signature: --key NAME.pub is required"))
			}
			if digest == "" {
				return usageErr(errors.New("plugin verify: --sha256 is required (or --key NAME.pub to check a signature)"))
			}
			info, _, err := describePlugin(cmd.Context(), args[0], digest)
			if err != nil {
				return verifyFailed(cmd.ErrOrStderr(), err)
			}
			d := info.Descriptor
			fmt.Fprintf(cmd.OutOrStdout(), "ok %s %s@%s ABI v%d.%d\n", info.Digest, d.Name, d.Version, d.ABIMajor, d.ABIMinor)
			return nil
		},
	}
	cmd.Flags().StringVar(&digest, "sha256", "", "the digest the module must have (hex, optionally sha256:-prefixed)")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "a trusted ed25519 public key (PEM); the plugin must be signed by one of them")
	return cmd
}

// describePlugin loads the plugin once to read its Info: verified when a
// digest is given, through the unverified inspect path otherwise. A file
// that is not a Wasm module is taken for a native process plugin, which
// is never run unverified.
func describePlugin(ctx context.Context, path, digest string) (plugin.Info, bool, error) {
	rt, err := plugin.NewRuntime(ctx, plugin.RuntimeOptions{CacheDir: compileCacheDir()})
	if err != nil {
		return plugin.Info{}, false, err
	}
	defer rt.Close(ctx)
	native, err := isNative(path)
	if err != nil {
		return plugin.Info{}, false, err
	}
	if native && digest == "" {
		return plugin.Info{}, false, fmt.Errorf("%s is not a Wasm module: a native (process) plugin is run to describe it, "+
			"so its digest must be pinned first: --sha256 (`sha256sum %s` prints it)", path, path)
	}
	if digest == "" {
		info, err := rt.Inspect(ctx, path)
		return info, false, err
	}
	load := rt.Load
	if native {
		load = rt.LoadProcess
	}
	p, err := load(ctx, path, digest, plugin.Options{Limits: plugin.Limits{PoolSize: 1}})
	if err != nil {
		return plugin.Info{}, false, err
	}
	info := p.Info()
	return info, true, p.Close(ctx)
}

// isNative reports whether the file at path is not a Wasm module (whose
// first bytes are "\x00asm").
func isNative(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return true, nil // too short for Wasm; loading says what it is not
	}
	return string(magic) != "\x00asm", nil
}

// writeIsolation prints the OS isolation each process plugin obtained.
func writeIsolation(w io.Writer, isos []engine.PluginIsolation) {
	for _, i := range isos {
		fmt.Fprintf(w, "plugin %s (%s, process): isolation %s\n", i.Name, i.ID, i.Report.Summary())
	}
}

// verifyFailed prints why and exits 1 (run() prints nothing for exit 1,
// which is the "check failed" code, not a usage error).
func verifyFailed(stderr io.Writer, err error) error {
	if errors.Is(err, plugin.ErrDigestMismatch) {
		fmt.Fprintln(stderr, "anvil-host: digest MISMATCH:", err)
	} else {
		fmt.Fprintln(stderr, "anvil-host:", err)
	}
	return &exitError{code: exitVerifyFailed, err: err}
}

func writeInspectJSON(w io.Writer, info plugin.Info, verified bool) error {
	out := struct {
		Path       string         `json:"path"`
		Digest     string         `json:"digest"`
		Verified   bool           `json:"verified"`
		Transport  string         `json:"transport"`
		HostABI    string         `json:"host_abi"`
		Descriptor abi.Descriptor `json:"descriptor"`
		// Isolation is a process plugin's OS isolation on this machine.
		Isolation *plugin.IsolationReport `json:"isolation,omitempty"`
	}{info.Path, info.Digest, verified, info.Transport, fmt.Sprintf("%d.%d", abi.Major, abi.Minor), info.Descriptor, info.Isolation}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeInspect(w io.Writer, info plugin.Info, verified bool) error {
	d := info.Descriptor
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "plugin\t%s@%s\n", d.Name, d.Version)
	fmt.Fprintf(tw, "path\t%s\n", info.Path)
	state := "verified"
	if !verified {
		state = "NOT verified: pin it (sha256 in the config, or --sha256 here)"
	}
	fmt.Fprintf(tw, "digest\t%s  (%s)\n", info.Digest, state)
	fmt.Fprintf(tw, "transport\t%s\n", info.Transport)
	if info.Isolation != nil {
		fmt.Fprintf(tw, "isolation\t%s\n", info.Isolation.Summary())
	}
	fmt.Fprintf(tw, "abi\tv%d.%d (host speaks v%d.%d)\n", d.ABIMajor, d.ABIMinor, abi.Major, abi.Minor)
	caps := "none"
	if len(d.Capabilities) > 0 {
		var cs []string
		for _, c := range d.Capabilities {
			cs = append(cs, string(c))
		}
		caps = strings.Join(cs, ", ") + " (asked; the operator grants)"
	}
	fmt.Fprintf(tw, "capabilities\t%s\n", caps)
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nkinds (%d)\n", len(d.Kinds))
	for _, k := range d.Kinds {
		fmt.Fprintf(w, "\n  %s (%s)", k.Name, k.Role)
		if k.Description != "" {
			fmt.Fprintf(w, ": %s", k.Description)
		}
		fmt.Fprintln(w)
		detail := func(label, value string) { fmt.Fprintf(w, "    %-9s %s\n", label, value) }
		fields := "none fixed (the config may name some)"
		if len(k.RequiredFields) > 0 {
			fields = strings.Join(k.RequiredFields, ", ")
		}
		detail("fields", fields)
		if len(k.Verdicts) > 0 {
			detail("verdicts", strings.Join(k.Verdicts, ", "))
		}
		if k.Prepare {
			detail("prepare", "yes (once per run)")
		}
		for i, l := range schemaSummary(k.ConfigSchema) {
			label := ""
			if i == 0 {
				label = "config"
			}
			detail(label, l)
		}
	}
	return nil
}

// schemaSummary renders a config JSON Schema as one line per property, in
// declaration order: name, type, (required), description.
func schemaSummary(raw json.RawMessage) []string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []string{"(no schema)"}
	}
	var s struct {
		Properties           json.RawMessage `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties *bool           `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return []string{"(schema is not an object)"}
	}
	names, props := orderedProperties(s.Properties)
	if len(names) == 0 {
		return []string{"(no options)"}
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var lines []string
	for _, n := range names {
		p := props[n]
		l := n + " " + schemaType(p)
		if required[n] {
			l += " (required)"
		}
		if desc, _ := p["description"].(string); desc != "" {
			l += " — " + desc
		}
		lines = append(lines, l)
	}
	if s.AdditionalProperties != nil && !*s.AdditionalProperties {
		lines = append(lines, "(no other keys allowed)")
	}
	return lines
}

// orderedProperties decodes a JSON object keeping its key order.
func orderedProperties(raw json.RawMessage) ([]string, map[string]map[string]any) {
	props := map[string]map[string]any{}
	if len(raw) == 0 {
		return nil, props
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, props
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := t.(string)
		var p map[string]any
		if err := dec.Decode(&p); err != nil {
			break
		}
		names = append(names, name)
		props[name] = p
	}
	return names, props
}

func schemaType(p map[string]any) string {
	if enum, ok := p["enum"].([]any); ok {
		var vs []string
		for _, v := range enum {
			b, _ := json.Marshal(v)
			vs = append(vs, string(b))
		}
		return "one of " + strings.Join(vs, "|")
	}
	switch t := p["type"].(type) {
	case string:
		if t == "array" {
			if items, ok := p["items"].(map[string]any); ok {
				return "array of " + schemaType(items)
			}
		}
		return t
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		sort.Strings(ts)
		return strings.Join(ts, "|")
	}
	return "any"
}

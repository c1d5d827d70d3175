package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/agentanvil/anvil/host/internal/conformance"
)

// exitConformanceFailed is the exit code of `plugin test` when a check
// failed.
const exitConformanceFailed = 1

func newPluginTestCmd() *cobra.Command {
	var kit kitFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test PATH",
		Short: "Run the conformance kit against a plugin (descriptor, golden vectors, kinds, instances, judge use)",
		Long: `Load the plugin at PATH as the host does (sandboxed, digest checked) and
run the conformance kit against it: the descriptor (ABI version, schema,
kinds and roles, config schemas, capabilities); the ABI's golden vectors;
for every declared kind, generated cases (every field set, each required
field missing, unicode, large inputs), determinism, tolerance of unknown
fields, concurrent calls across the instance pool, recovery after a call
cut short by its deadline; and, for a plugin that asks for the judge, its
use of a scripted judge (granted, denied, token and call budgets).

Prints one line per check, PASS, FAIL or SKIP, and a summary; exits 0
only when no check failed (1 otherwise, 2 on a usage error).

A kind whose config_schema requires fields is skipped unless given a
config: --config KIND='{"...": ...}' (repeatable) or --config-file F
(YAML or JSON: a map from kind name to config). A node kind whose
verdicts come from the DAG is asked with --verdicts KIND=a,b.

Without --sha256 the digest is computed from the file (you are testing
your own build) and printed on the first line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, note, err := kit.run(cmd, args[0], "plugin test")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = conformance.WriteJSON(out, rep)
			} else {
				fmt.Fprintf(out, "plugin %s  %s  %s  (%s)\n", args[0], rep.Plugin, rep.Digest, rep.Transport)
				if note != "" {
					fmt.Fprintln(out, note)
				}
				err = conformance.WriteText(out, rep)
			}
			if err != nil {
				return err
			}
			if !rep.OK() {
				// Exit 1 is the "check failed" code, for which run() prints
				// nothing: say which checks here.
				fmt.Fprintf(cmd.ErrOrStderr(), "anvil-host: plugin test: %d check(s) failed: %s\n", rep.Failed, strings.Join(failedChecks(rep), ", "))
				return &exitError{code: exitConformanceFailed}
			}
			return nil
		},
	}
	kit.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func failedChecks(rep *conformance.Report) []string {
	var failed []string
	for _, r := range rep.Results {
		if r.Status == conformance.Fail {
			failed = append(failed, r.Name)
		}
	}
	return failed
}

// kitFlags are the conformance kit's flags, shared by `plugin test` and
// `plugin publish`.
type kitFlags struct {
	digest, transport, configFile, from string
	configs, verdicts                   []string
}

func (k *kitFlags) register(f *pflag.FlagSet) {
	f.StringVar(&k.digest, "sha256", "", "check the file against this digest first (default: compute it)")
	f.StringVar(&k.transport, "transport", "", "wasm or process (default: a Wasm module is wasm, anything else process)")
	f.StringArrayVar(&k.configs, "config", nil, "a kind's config as KIND=JSON (repeatable)")
	f.StringVar(&k.configFile, "config-file", "", "YAML or JSON file mapping kind names to configs")
	f.StringVar(&k.from, "from", "", "take the kinds' configs from this anvil.yaml's metrics (default: $ANVIL_CONFIG, else ./anvil.yaml if present)")
	f.StringArrayVar(&k.verdicts, "verdicts", nil, "the verdicts a node kind is asked for, KIND=v1,v2 (repeatable)")
}

// run runs the kit on the plugin at path; note says where the kinds'
// configs came from, when from a config file found.
func (k *kitFlags) run(cmd *cobra.Command, path, what string) (rep *conformance.Report, note string, err error) {
	opts := conformance.Options{Path: path, Digest: k.digest, Transport: k.transport, CacheDir: compileCacheDir(),
		Configs: map[string]json.RawMessage{}, Verdicts: map[string][]string{}}
	if k.configFile == "" && len(k.configs) == 0 {
		found, err := findConfig(k.from, os.Getenv)
		switch {
		case err == nil:
			m, err := metricConfigs(found)
			if err != nil {
				return nil, "", usageErr(fmt.Errorf("%s: configs from %s: %w", what, found, err))
			}
			opts.Configs = m
			note = "configs from " + found
		case k.from != "" || !errors.Is(err, errNoConfig):
			return nil, "", usageErr(fmt.Errorf("%s: %w", what, err))
		}
	}
	if k.configFile != "" {
		m, err := readKindConfigs(k.configFile)
		if err != nil {
			return nil, "", usageErr(fmt.Errorf("%s: --config-file: %w", what, err))
		}
		opts.Configs = m
	}
	for _, c := range k.configs {
		kind, raw, ok := strings.Cut(c, "=")
		if !ok || kind == "" || !json.Valid([]byte(raw)) {
			return nil, "", usageErr(fmt.Errorf("%s: --config %q: want KIND=JSON", what, c))
		}
		opts.Configs[kind] = json.RawMessage(raw)
	}
	for _, v := range k.verdicts {
		kind, list, ok := strings.Cut(v, "=")
		if !ok || kind == "" || list == "" {
			return nil, "", usageErr(fmt.Errorf("%s: --verdicts %q: want KIND=v1,v2", what, v))
		}
		opts.Verdicts[kind] = strings.Split(list, ",")
	}
	if _, err := os.Stat(opts.Path); err != nil {
		return nil, "", usageErr(fmt.Errorf("%s: %w", what, err))
	}
	rep, err = conformance.Run(cmd.Context(), opts)
	if err != nil {
		return nil, "", usageErr(fmt.Errorf("%s: %w", what, err))
	}
	return rep, note, nil
}

// readKindConfigs reads a map kind → config from a YAML (or JSON) file.
func readKindConfigs(path string) (map[string]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("empty: want a map from kind name to config")
	}
	out := map[string]json.RawMessage{}
	for kind, v := range m {
		if _, ok := v.(map[string]any); !ok {
			return nil, fmt.Errorf("kind %s: config is not a map", kind)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("kind %s: %w", kind, err)
		}
		out[kind] = raw
	}
	return out, nil
}

// metricConfigs reads the params of an anvil.yaml's metrics, the first
// metric of each kind, as the configs to test the kinds with. Only the
// metrics are read: the rest of the file (plugins, judges, dataset) need
// not be valid yet.
func metricConfigs(path string) (map[string]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Metrics []struct {
			Kind   string `yaml:"kind"`
			Params any    `yaml:"params"`
		} `yaml:"metrics"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, m := range doc.Metrics {
		if _, seen := out[m.Kind]; seen || m.Kind == "" {
			continue
		}
		params := m.Params
		if params == nil {
			params = map[string]any{}
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("metric of kind %s: params: %w", m.Kind, err)
		}
		out[m.Kind] = raw
	}
	return out, nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/results"
)

// validateReport is `validate --json`: what was checked and what is wrong.
// OK is false exactly when Errors is not empty (then the exit code is 2).
type validateReport struct {
	OK         bool                     `json:"ok"`
	Config     string                   `json:"config,omitempty"`
	ConfigHash string                   `json:"config_hash,omitempty"`
	Metrics    []validateMetric         `json:"metrics"`
	Plugins    []validatePlugin         `json:"plugins"`
	Dataset    *validateDataset         `json:"dataset,omitempty"`
	Warnings   []string                 `json:"warnings"`
	Errors     []string                 `json:"errors"`
	gaps       []results.FieldGap       // the text output's notes
	isolation  []engine.PluginIsolation // the text output's isolation lines
}

type validateMetric struct {
	Name      string  `json:"name"` // the metric's key (name#1, name#2 when names repeat)
	Kind      string  `json:"kind"`
	Judge     string  `json:"judge,omitempty"`
	Threshold float64 `json:"threshold"`
	Gate      bool    `json:"gate"`
	// Judges, Aggregate and Samples are set for a panel or samples: N.
	Judges    []string `json:"judges,omitempty"`
	Aggregate string   `json:"aggregate,omitempty"`
	Samples   int      `json:"samples,omitempty"`
	// JudgeCascade and EscalateBand are set for a judge cascade (Judge is
	// then its last judge).
	JudgeCascade []string  `json:"judge_cascade,omitempty"`
	EscalateBand []float64 `json:"escalate_band,omitempty"`
}

type validatePlugin struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Transport string `json:"transport"`
	// SHA256 is the digest of the module file that was verified against
	// its pin.
	SHA256 string `json:"sha256,omitempty"`
	// Isolation is a process plugin's OS isolation on this machine.
	Isolation *plugin.IsolationReport `json:"isolation,omitempty"`
	// Ref is the pinned reference of a plugin pulled from a registry
	// (oci://REGISTRY/REPO@sha256:…); Path is then its cached module.
	Ref string `json:"ref,omitempty"`
	// Signer is the trusted publisher that signed it, or "unsigned".
	Signer string `json:"signer,omitempty"`
	// Conformance is the accepted conformance attestation, when the trust
	// policy requires one: its counts and who attested it.
	Conformance string `json:"conformance,omitempty"`
}

type validateDataset struct {
	Path      string             `json:"path"`
	Cases     int                `json:"cases"`
	FieldGaps []results.FieldGap `json:"field_gaps"`
}

func newValidateCmd() *cobra.Command {
	var lf loadFlags
	var input string
	var noData, asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the config, plugins (digests, ABI), DAGs and the dataset without running anything",
		Long: `Load the config as run would — plugins verified and described, params checked
against each kind's schema and by the kind's own check (the one run makes
before its first judge call; its warnings are printed), the case fields a
metric names checked against a test case's fields (a misspelling is an
error with the nearest name), DAGs validated — then read the whole dataset:
every record must parse, and for each metric the fields cases lack are
listed (those cases would be skipped for that metric) — and measure each
metric on the first case that has its fields, under estimate's dry run, so
that what a kind asks of the config only when it measures (a similarity
metric's judge needs embedding_model) is an error here, not on every case. Nothing calls the
judge, and no API key is needed.

With --json, stdout is one JSON report: ok, config, config_hash, metrics,
plugins (path, transport, digest, a process plugin's isolation), dataset
(path, cases, field_gaps), warnings and errors. It is printed on failure
too (ok false, exit 2).

` + configRuleHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := validate(cmd.Context(), &lf, input, noData, cmd.ErrOrStderr())
			out := cmd.OutOrStdout()
			if asJSON {
				if werr := writeJSON(out, rep); werr != nil && err == nil {
					err = werr
				}
				return err
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s: ok (%d metrics, config hash %s)\n", rep.Config, len(rep.Metrics), rep.ConfigHash)
			writeIsolation(out, rep.isolation)
			if rep.Dataset != nil {
				fmt.Fprintf(out, "dataset: %d case(s) parse\n", rep.Dataset.Cases)
				for _, g := range rep.gaps {
					fmt.Fprintln(out, "note:", g)
				}
			}
			return nil
		},
	}
	lf.register(cmd)
	cmd.Flags().StringVar(&input, "input", "", "dataset to check; default from config")
	cmd.Flags().BoolVar(&noData, "no-dataset", false, "check the config only")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON report on stdout (also on failure; the exit code is the same)")
	return cmd
}

// validate loads the config and the plugins and reads the dataset,
// filling the report as far as it got; the error carries the exit code.
func validate(ctx context.Context, lf *loadFlags, input string, noData bool, stderr io.Writer) (*validateReport, error) {
	rep := &validateReport{Metrics: []validateMetric{}, Plugins: []validatePlugin{}, Warnings: []string{}, Errors: []string{}}
	fail := func(err error) (*validateReport, error) {
		for _, l := range strings.Split(err.Error(), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				rep.Errors = append(rep.Errors, l)
			}
		}
		var ee *exitError
		if !errors.As(err, &ee) {
			err = usageErr(err)
		}
		return rep, err
	}
	if path, err := lf.configPath(); err == nil {
		rep.Config = path
	}
	cfg, eng, err := lf.load(ctx, stderr)
	if err != nil {
		return fail(err)
	}
	defer eng.Close(context.WithoutCancel(ctx))
	rep.Config, rep.ConfigHash = cfg.File, eng.ConfigHash()
	rep.Warnings = append(rep.Warnings, eng.Warnings()...)
	// The kinds' own checks, as run makes them before its first judge call.
	warns, err := checkKinds(ctx, eng, stderr)
	rep.Warnings = append(rep.Warnings, warns...)
	if err != nil {
		return fail(err)
	}
	for _, m := range cfg.Metrics {
		vm := validateMetric{Name: m.Key, Kind: m.Kind, Judge: cfg.JudgeName(m), Threshold: cfg.Threshold(m), Gate: m.Gated(), Samples: max(m.Samples.N, m.Samples.Max)}
		if len(m.Judges) > 1 {
			vm.Judges, vm.Aggregate = m.Judges, m.Aggregation()
		}
		if len(m.JudgeCascade) > 0 {
			vm.JudgeCascade, vm.EscalateBand = m.JudgeCascade, m.Band()
		}
		rep.Metrics = append(rep.Metrics, vm)
	}
	rep.isolation = eng.ProcessIsolation()
	rep.Plugins = pluginReports(cfg, eng, rep.isolation)
	if noData || (input == "" && cfg.Dataset == "") {
		rep.OK = true
		return rep, nil
	}
	path := input
	if path == "" {
		path = cfg.Resolve(cfg.Dataset)
	}
	check, err := eng.CheckDataset(ctx, input)
	if err != nil {
		return fail(err)
	}
	rep.Dataset = &validateDataset{Path: path, Cases: check.Cases, FieldGaps: check.Gaps}
	if rep.Dataset.FieldGaps == nil {
		rep.Dataset.FieldGaps = []results.FieldGap{}
	}
	rep.gaps = check.Gaps
	// What a kind asks of the config at measure time (a judge's
	// embedding_model), found by measuring a case under the dry run.
	if err := eng.CheckMeasures(ctx, input); err != nil {
		return fail(err)
	}
	rep.OK = true
	return rep, nil
}

// pluginReports lists the configured plugins by name with the digest of
// the module file (verified against its pin while loading) and a process
// plugin's isolation.
func pluginReports(cfg *config.Config, eng *engine.Engine, isos []engine.PluginIsolation) []validatePlugin {
	byName := map[string]*plugin.IsolationReport{}
	for _, i := range isos {
		byName[i.Name] = i.Report
	}
	out := []validatePlugin{}
	for name, p := range cfg.Plugins {
		if p == nil {
			continue
		}
		vp := validatePlugin{Name: name, Path: cfg.Resolve(p.Path), Transport: p.Transport, Isolation: byName[name]}
		if id, signer, ok := eng.PluginSource(name); ok {
			if signer != "unsigned" || p.Ref != "" {
				vp.Signer = signer // a local unsigned plugin's report stays as it was
			}
			if p.Ref != "" {
				vp.Ref = id
				vp.Path = ""
			}
			vp.Conformance = eng.PluginConformance(name)
		}
		if vp.Transport == "" {
			vp.Transport = "wasm"
		}
		if d, err := plugin.FileDigest(vp.Path); err == nil {
			vp.SHA256 = d
		}
		out = append(out, vp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

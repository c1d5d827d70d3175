// Package config reads anvil.yaml: judges, plugins, metrics and defaults.
//
// Invariants: decoding is strict — an unknown key, a repeated key, a wrong
// type or a second YAML document is an error naming file:line and the key
// in words (`unknown key "treshold" in metric "x" (did you mean
// "threshold"?)`), never a Go type; paths in the file are resolved
// relative to the file; every error names the file and, where there is
// one, the line and the field. A number given says what it means: absent
// (or null) takes the default, while an explicit 0 or a negative count,
// limit or timeout is an error — defaults are applied later, by the judge
// and plugin layers, and would otherwise replace it silently (the rule and
// its one exception, max_retries: 0, are in strict.go). Durations are
// host/internal/duration everywhere: "30s" or a number of seconds. Metric
// params are kept as YAML nodes so later checks (a DAG, a kind's JSON
// Schema) can point at the line that is wrong.
//
// Parsing a config links no judge client and no plugin runtime: the
// judge and plugin settings are the types of host/internal/judgeconfig and
// host/internal/pluginconfig (which judge and plugin alias), and this
// package imports neither judge nor plugin — TestParsingLinksNoRuntime
// holds that.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/agentanvil/anvil/host/internal/judgeconfig"
	"github.com/agentanvil/anvil/host/internal/pluginconfig"
)

// Config is a parsed anvil.yaml.
type Config struct {
	// File is the path the config was read from; Dir its directory.
	File string `yaml:"-"`
	Dir  string `yaml:"-"`

	Version  int                            `yaml:"version"`
	Dataset  string                         `yaml:"dataset"`
	Judges   map[string]*judgeconfig.Config `yaml:"judges"`
	Plugins  map[string]*Plugin             `yaml:"plugins"`
	Metrics  []*Metric                      `yaml:"metrics"`
	Defaults Defaults                       `yaml:"defaults"`
	// Trust is the policy on who may ship plugins (docs/distribution.md).
	Trust Trust `yaml:"trust"`

	judgeLines map[string]int // judge name → line of its key
}

// Defaults apply where a metric or the command line says nothing.
type Defaults struct {
	Judge       string   `yaml:"judge"`
	Threshold   *float64 `yaml:"threshold"`
	Concurrency int      `yaml:"concurrency"`
	OutputDir   string   `yaml:"output_dir"`
	Store       string   `yaml:"store"`
	Cache       string   `yaml:"cache"`
}

// Plugin is a plugin the operator allows, pinned by digest: a local file
// (path, with sha256 or sha256_file) or an OCI reference (ref, pinned by
// anvil.lock beside the config).
type Plugin struct {
	Path string `yaml:"path"`
	// Ref is oci://REGISTRY/REPO:TAG or oci://REGISTRY/REPO@sha256:…; the
	// plugin is pulled into the local cache, its digest verified, and
	// loaded as a local plugin is. Give path or ref, not both.
	Ref string `yaml:"ref"`
	// RequireSignature refuses the plugin unless a trusted publisher
	// (trust.publishers) signed it, whatever trust.require_signatures says.
	RequireSignature bool `yaml:"require_signature"`
	// SHA256 pins the module ("sha256:<hex>" or bare hex).
	SHA256 string `yaml:"sha256"`
	// SHA256File names a file holding the digest, for plugins built locally
	// from source (scripts/build-plugins writes <module>.sha256).
	SHA256File string `yaml:"sha256_file"`
	// Transport is how the plugin runs: "wasm" (the default: a sandboxed
	// module) or "process" (a native go-plugin binary, OS-isolated on
	// Linux; see docs/process-plugins.md).
	Transport string              `yaml:"transport"`
	Grants    pluginconfig.Grants `yaml:"grants"`
	Limits    pluginconfig.Limits `yaml:"limits"`
	Line      int                 `yaml:"-"`

	// Isolation (transport: process) is "best_effort" (the default) or
	// "required": then a plugin the kernel cannot fully isolate is a
	// load error, and its code does not run (docs/process-plugins.md).
	Isolation pluginconfig.IsolationMode `yaml:"isolation"`
}

// Trust is the operator's trust policy: which publisher keys are trusted,
// whether every plugin must be signed, and which capabilities each
// publisher's plugins may be granted. It is checked before a plugin is
// compiled or started.
type Trust struct {
	// RequireSignatures refuses every plugin not signed by a trusted publisher.
	RequireSignatures bool `yaml:"require_signatures"`
	// RequireConformance refuses every plugin without a passing
	// conformance attestation signed by a trusted publisher (what
	// `plugin publish` attaches in the registry).
	RequireConformance bool `yaml:"require_conformance"`
	// Publishers are the trusted publishers, by a name the operator chooses.
	Publishers map[string]*Publisher `yaml:"publishers"`
}

// Publisher is one trusted publisher.
type Publisher struct {
	// Key is the publisher's ed25519 public key (PEM), relative to the config.
	Key string `yaml:"key"`
	// Capabilities its plugins may be granted (e.g. [judge]); none when empty.
	Capabilities []string `yaml:"capabilities"`
	Line         int      `yaml:"-"`
}

// Metric is a configured metric instance.
type Metric struct {
	Name string `yaml:"name"`
	Kind string `yaml:"kind"`
	// Judge names a judge in Judges; empty means Defaults.Judge.
	Judge string `yaml:"judge"`
	// Judges names a panel instead of one judge: each judge scores every
	// case (with its own limits and cache) and Aggregate combines them.
	// Exclusive with Judge.
	Judges []string `yaml:"judges"`
	// Aggregate combines a panel's scores: "mean" (the default), "median",
	// or "majority" (the verdict is the judges' majority vote).
	Aggregate string `yaml:"aggregate"`
	// Samples is how many times each judge scores each case (absent: 1);
	// the verdict is decided on the samples' mean. Given as a mapping
	// (max, min, stop_at_ci_width) the samples are adaptive.
	Samples Samples `yaml:"samples"`
	// JudgeCascade names judges cheapest first: each scores the case in
	// turn until one is sure (see EscalateBand). Exclusive with judge
	// and judges.
	JudgeCascade []string `yaml:"judge_cascade"`
	// EscalateBand is [low, high]: a cascade judge whose P(pass) is inside
	// it, bounds included, hands the case to the next judge. Absent:
	// DefaultEscalateBand.
	EscalateBand []float64 `yaml:"escalate_band"`
	Threshold    *float64  `yaml:"threshold"`
	// Gate false makes the metric informational: it never fails the run.
	Gate *bool `yaml:"gate"`
	// MaxErrorRate is the share of cases (0..1) that may end in a judge,
	// plugin or metric error before the gate cannot verify the metric
	// (exit 3); nil means 0: any error on a gated metric fails it.
	MaxErrorRate *float64 `yaml:"max_error_rate"`
	// Standalone also runs a metric used as a DAG child on its own; by
	// default a DAG child runs only inside its DAG.
	Standalone bool `yaml:"standalone"`
	// Params is the kind's config, kept as YAML for line-accurate errors.
	Params yaml.Node `yaml:"params"`

	// Key is the metric's unique key: Name, or name#1, name#2 when names repeat.
	Key  string `yaml:"-"`
	Line int    `yaml:"-"`
}

// Gated reports whether a failing threshold fails the run.
func (m *Metric) Gated() bool { return m.Gate == nil || *m.Gate }

// ParamsJSON converts Params to JSON for a plugin.
func (m *Metric) ParamsJSON() (json.RawMessage, error) {
	if m.Params.Kind == 0 {
		return json.RawMessage("{}"), nil
	}
	var v any
	if err := m.Params.Decode(&v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(normalise(v))
	if err != nil {
		return nil, fmt.Errorf("metric %s params: %w", m.Key, err)
	}
	return b, nil
}

// normalise turns YAML's map[any]any (non-string keys) into JSON-encodable maps.
func normalise(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalise(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalise(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = normalise(x)
		}
		return t
	}
	return v
}

// Threshold of a metric, falling back to the defaults and then 0.5.
func (c *Config) Threshold(m *Metric) float64 {
	switch {
	case m.Threshold != nil:
		return *m.Threshold
	case c.Defaults.Threshold != nil:
		return *c.Defaults.Threshold
	}
	return 0.5
}

// JudgeName of a metric: its judge, the first of its panel, or the
// default judge.
//
// A cascade's judge is its last (strongest) one: it does the metric's
// once-per-run work (G-Eval's steps), which every judge of the cascade
// then scores with, and it is the judge a strong-only run would name.
func (c *Config) JudgeName(m *Metric) string {
	if m.Judge != "" {
		return m.Judge
	}
	if len(m.JudgeCascade) > 0 {
		return m.JudgeCascade[len(m.JudgeCascade)-1]
	}
	if len(m.Judges) > 0 {
		return m.Judges[0]
	}
	return c.Defaults.Judge
}

// JudgeNames of a metric: its panel, or its one judge.
func (c *Config) JudgeNames(m *Metric) []string {
	if len(m.Judges) > 0 {
		return m.Judges
	}
	return []string{c.JudgeName(m)}
}

// Aggregations a panel may use.
const (
	AggregateMean     = "mean"
	AggregateMedian   = "median"
	AggregateMajority = "majority"
)

// MaxSamples bounds a metric's samples: each is a judge call per case.
const MaxSamples = 100

// SampleCount is how many times each judge scores each case at most: 1
// unless samples says more (for adaptive samples, their max).
func (m *Metric) SampleCount() int { return max(m.Samples.N, m.Samples.Max, 1) }

// Aggregation is the panel's aggregation, mean unless aggregate says.
func (m *Metric) Aggregation() string {
	if m.Aggregate == "" {
		return AggregateMean
	}
	return m.Aggregate
}

// Metric returns the metric with the given key or name.
func (c *Config) Metric(key string) (*Metric, bool) {
	for _, m := range c.Metrics {
		if m.Key == key {
			return m, true
		}
	}
	return nil, false
}

// Hash identifies what the results of a run depend on: metrics, their
// params, judges' models (and number_tokens where it overrides the model's
// family) and plugin digests — not concurrency, paths or limits. --resume only reuses results written under the same hash.
func (c *Config) Hash(pluginDigests map[string]string) string {
	type metricID struct {
		Key, Kind, Judge, Model string
		Threshold               float64
		Params                  json.RawMessage
		// NumberTokens is set only when the judge's number_tokens
		// overrides its model family's rule (which the model already
		// determines), so the hashes of existing results stay valid.
		NumberTokens string `json:",omitempty"`
		// Omitted when unset, so a config without panels or samples keeps
		// the hash it had before they existed.
		Panel     []string `json:",omitempty"`
		Models    []string `json:",omitempty"`
		Aggregate string   `json:",omitempty"`
		Samples   int      `json:",omitempty"`
		// Adaptive samples and a cascade, omitted when unset (hashes of
		// configs without them unchanged).
		Adaptive      *Samples  `json:",omitempty"`
		Cascade       []string  `json:",omitempty"`
		CascadeModels []string  `json:",omitempty"`
		Band          []float64 `json:",omitempty"`
	}
	var ms []metricID
	for _, m := range c.Metrics {
		p, _ := m.ParamsJSON()
		model, numbers := "", ""
		if j := c.Judges[c.JudgeName(m)]; j != nil {
			model = j.Model
			if rule := j.NumberTokens.Resolve(j.Model); rule != judgeconfig.NumberTokensFor(j.Model) {
				numbers = string(rule)
			}
		}
		id := metricID{Key: m.Key, Kind: m.Kind, Judge: c.JudgeName(m), Model: model, Threshold: c.Threshold(m), Params: p,
			NumberTokens: numbers, Aggregate: m.Aggregate, Samples: m.Samples.N}
		if m.Samples.Adaptive() {
			a := m.Samples
			id.Adaptive = &a
		}
		if len(m.JudgeCascade) > 0 {
			id.Cascade, id.Band = m.JudgeCascade, m.Band()
			for _, jn := range m.JudgeCascade {
				if j := c.Judges[jn]; j != nil {
					id.CascadeModels = append(id.CascadeModels, j.Model)
				}
			}
		}
		if len(m.Judges) > 1 {
			id.Panel = m.Judges
			for _, jn := range m.Judges {
				if j := c.Judges[jn]; j != nil {
					id.Models = append(id.Models, j.Model)
				}
			}
		}
		ms = append(ms, id)
	}
	names := make([]string, 0, len(pluginDigests))
	for n := range pluginDigests {
		names = append(names, n)
	}
	sort.Strings(names)
	var ds []string
	for _, n := range names {
		ds = append(ds, n+"="+pluginDigests[n])
	}
	b, _ := json.Marshal(struct {
		Metrics []metricID
		Plugins []string
	}{ms, ds})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

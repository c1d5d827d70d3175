// Package textcheck is a deterministic, judge-free Anvil plugin written the
// way a third party would write one: against package sdk, with the text
// logic it shares with the first-party assertion kinds (plugins/assert)
// from package plugins/textmatch, so the two never disagree. It provides
// the metric kinds exact_match and json_valid and the DAG code-node kinds
// json_valid, regex_match and contains_all (verdicts "false"/"true").
//
// The kinds are in this importable package so the host can link them
// in-process (and a conformance test can compare that with the sandboxed
// build); the Wasm module is built from ./wasm. See README.md.
package textcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/textmatch"
	"github.com/agentanvil/anvil/sdk"
)

// Name and Version identify the plugin.
const (
	Name    = "textcheck"
	Version = "1.0.0"
)

// Plugin returns the textcheck plugin. It asks for no capabilities.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:    Name,
		Version: Version,
		Kinds: []sdk.Kind{
			exactMatch(),
			jsonValidMetric(),
			jsonValidNode(),
			regexMatchNode(),
			containsAllNode(),
		},
	}
}

// Verdicts of every node kind: a code gate.
var verdicts = []string{"false", "true"}

// ExactMatchConfig configures exact_match.
type ExactMatchConfig struct {
	IgnoreCase bool `json:"ignore_case,omitempty" jsonschema:"description=compare case-insensitively (Unicode simple folding)"`
	Trim       bool `json:"trim,omitempty" jsonschema:"description=ignore leading and trailing white space on both sides"`
}

func exactMatch() *sdk.MetricKind[ExactMatchConfig] {
	return &sdk.MetricKind[ExactMatchConfig]{
		Name:           "exact_match",
		Description:    "1 when actual_output equals expected_output, else 0",
		RequiredFields: []string{abi.FieldActualOutput, abi.FieldExpectedOutput},
		Measure: func(_ context.Context, _ sdk.Host, cfg *ExactMatchConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			got, want := req.Case.ActualOutput, req.Case.ExpectedOutput
			if cfg.Trim {
				got, want = strings.TrimSpace(got), strings.TrimSpace(want)
			}
			if textmatch.Equal(got, want, cfg.IgnoreCase) {
				return binary(req, 1, "actual_output equals expected_output", nil), nil
			}
			at := textmatch.FirstDifference(got, want, cfg.IgnoreCase)
			reason := mismatchReason(at, textmatch.Excerpt(got, at), textmatch.Excerpt(want, at))
			res := binary(req, 0, reason, nil)
			// what json.Marshal(map[string]any{"first_difference": at}) writes
			res.Details = json.RawMessage(`{"first_difference":` + strconv.Itoa(at) + `}`)
			return res, nil
		},
	}
}

// JSONValidMetricConfig configures the json_valid metric kind.
type JSONValidMetricConfig struct {
	RequiredKeys []string `json:"required_keys,omitempty" jsonschema:"description=top-level keys the JSON object must have (the value must then be an object)"`
}

func jsonValidMetric() *sdk.MetricKind[JSONValidMetricConfig] {
	return &sdk.MetricKind[JSONValidMetricConfig]{
		Name:           "json_valid",
		Description:    "1 when actual_output is valid JSON (with the required top-level keys), else 0",
		RequiredFields: []string{abi.FieldActualOutput},
		Measure: func(_ context.Context, _ sdk.Host, cfg *JSONValidMetricConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			c := textmatch.CheckJSON(req.Case.ActualOutput, abi.FieldActualOutput, cfg.RequiredKeys)
			score := 0.0
			if c.OK {
				score = 1
			}
			return binary(req, score, c.Reason, c.Details), nil
		},
	}
}

// JSONValidNodeConfig configures the json_valid node kind.
type JSONValidNodeConfig struct {
	Field        string   `json:"field,omitempty" jsonschema:"description=test-case field to check (default actual_output)"`
	RequiredKeys []string `json:"required_keys,omitempty" jsonschema:"description=top-level keys the JSON object must have (the value must then be an object)"`
}

func jsonValidNode() *sdk.NodeKind[JSONValidNodeConfig] {
	return &sdk.NodeKind[JSONValidNodeConfig]{
		Name:        "json_valid",
		Description: "true when the field is valid JSON (with the required top-level keys)",
		Verdicts:    verdicts,
		Fields:      func(c *JSONValidNodeConfig) []string { return []string{fieldOr(c.Field)} },
		Run: func(_ context.Context, _ sdk.Host, cfg *JSONValidNodeConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
			field := fieldOr(cfg.Field)
			text, _ := req.Case.Field(field)
			c := textmatch.CheckJSON(text, field, cfg.RequiredKeys)
			return verdict(c.OK, c.Reason, c.Details), nil
		},
	}
}

// RegexMatchConfig configures regex_match.
type RegexMatchConfig struct {
	Pattern string `json:"pattern" jsonschema:"required,minLength=1,description=RE2 regular expression (Go syntax); (?i) makes it case-insensitive"`
	Field   string `json:"field,omitempty" jsonschema:"description=test-case field to match (default actual_output)"`
}

func regexMatchNode() *sdk.NodeKind[RegexMatchConfig] {
	return &sdk.NodeKind[RegexMatchConfig]{
		Name:        "regex_match",
		Description: "true when the pattern matches somewhere in the field",
		Verdicts:    verdicts,
		Fields:      func(c *RegexMatchConfig) []string { return []string{fieldOr(c.Field)} },
		Validate: func(c *RegexMatchConfig) error {
			if c.Pattern == "" {
				return &abi.Error{Code: abi.CodeInvalidConfig, Field: "pattern", Message: "pattern is required"}
			}
			if _, err := textmatch.CompilePattern(c.Pattern); err != nil {
				return &abi.Error{Code: abi.CodeInvalidConfig, Field: "pattern", Message: "pattern " + err.Error()}
			}
			return nil
		},
		Run: func(_ context.Context, _ sdk.Host, cfg *RegexMatchConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
			field := fieldOr(cfg.Field)
			text, _ := req.Case.Field(field)
			re, err := textmatch.CompilePattern(cfg.Pattern)
			if err != nil { // validated before Run; kept for a caller that skips it
				return nil, &abi.Error{Code: abi.CodeInvalidConfig, Field: "pattern", Message: "pattern " + err.Error()}
			}
			loc := re.FindStringIndex(text)
			if loc == nil {
				return verdict(false, fmt.Sprintf("%s does not match /%s/", field, cfg.Pattern), nil), nil
			}
			return verdict(true, fmt.Sprintf("%s matches /%s/ at %d: %q", field, cfg.Pattern, loc[0], textmatch.Clip(text[loc[0]:loc[1]], 80)),
				map[string]any{"match_start": loc[0], "match_end": loc[1]}), nil
		},
	}
}

// ContainsAllConfig configures contains_all.
type ContainsAllConfig struct {
	Substrings []string `json:"substrings" jsonschema:"required,minItems=1,description=every one of these must occur in the field"`
	Field      string   `json:"field,omitempty" jsonschema:"description=test-case field to search (default actual_output)"`
	IgnoreCase bool     `json:"ignore_case,omitempty" jsonschema:"description=search case-insensitively"`
}

func containsAllNode() *sdk.NodeKind[ContainsAllConfig] {
	return &sdk.NodeKind[ContainsAllConfig]{
		Name:        "contains_all",
		Description: "true when the field contains every configured substring",
		Verdicts:    verdicts,
		Fields:      func(c *ContainsAllConfig) []string { return []string{fieldOr(c.Field)} },
		Validate: func(c *ContainsAllConfig) error {
			if len(c.Substrings) == 0 {
				return &abi.Error{Code: abi.CodeInvalidConfig, Field: "substrings", Message: "substrings must list at least one string"}
			}
			for i, s := range c.Substrings {
				if s == "" {
					return &abi.Error{Code: abi.CodeInvalidConfig, Field: "substrings",
						Message: fmt.Sprintf("substrings[%d] is empty (it would match everything)", i)}
				}
			}
			return nil
		},
		Run: func(_ context.Context, _ sdk.Host, cfg *ContainsAllConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
			field := fieldOr(cfg.Field)
			text, _ := req.Case.Field(field)
			_, missing := textmatch.Partition(text, cfg.Substrings, cfg.IgnoreCase)
			if len(missing) > 0 {
				return verdict(false, fmt.Sprintf("%s lacks %d of %d substrings: %q", field, len(missing), len(cfg.Substrings), missing),
					map[string]any{"missing": missing}), nil
			}
			return verdict(true, fmt.Sprintf("%s contains all %d substrings", field, len(cfg.Substrings)), nil), nil
		},
	}
}

// binary builds the result of a 0/1 metric. The pass mark is the configured
// threshold, or 1 when none is set: a zero threshold would pass every case,
// which is never what a binary check means.
func binary(req *abi.MeasureRequest, score float64, reason string, details map[string]any) *abi.MeasureResult {
	th := req.Threshold
	if th <= 0 {
		th = 1
	}
	res := &abi.MeasureResult{Score: &score, Success: score >= th, Threshold: th, Reason: reason}
	if details != nil {
		res.Details, _ = json.Marshal(details)
	}
	return res
}

func verdict(ok bool, reason string, details map[string]any) *abi.NodeResult {
	res := &abi.NodeResult{Verdict: "false", Reason: reason}
	if ok {
		res.Verdict = "true"
	}
	if details != nil {
		res.Details, _ = json.Marshal(details)
	}
	return res
}

func fieldOr(f string) string {
	if f == "" {
		return abi.FieldActualOutput
	}
	return f
}

// mismatchReason is exact_match's reason for a difference:
//
//	fmt.Sprintf("actual_output differs from expected_output at character %d: got %s, want %s", at, got, want)
//
// without fmt, whose format scanning and reflection cost a Wasm guest a
// loop turn per byte and a call per verb, each of them metered (bench/README.md,
// History, "Wasm path: direct I/O and the pool").
func mismatchReason(at int, got, want string) string {
	return "actual_output differs from expected_output at character " + strconv.Itoa(at) + ": got " + got + ", want " + want
}

// Package textcheck is a deterministic, judge-free Anvil plugin written the
// way a third party would write one: only against package sdk. It provides
// the metric kinds exact_match and json_valid and the DAG code-node kinds
// json_valid, regex_match and contains_all (verdicts "false"/"true").
//
// The kinds are in this importable package so the host can link them
// in-process (and a conformance test can compare that with the sandboxed
// build); the Wasm module is built from ./wasm. See README.md.
package textcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
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
			equal := got == want
			if cfg.IgnoreCase {
				equal = strings.EqualFold(got, want)
			}
			if equal {
				return binary(req, 1, "actual_output equals expected_output", nil), nil
			}
			at := firstDifference(got, want, cfg.IgnoreCase)
			reason := mismatchReason(at, excerpt(got, at), excerpt(want, at))
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
			ok, reason, details := checkJSON(req.Case.ActualOutput, abi.FieldActualOutput, cfg.RequiredKeys)
			score := 0.0
			if ok {
				score = 1
			}
			return binary(req, score, reason, details), nil
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
			ok, reason, details := checkJSON(text, field, cfg.RequiredKeys)
			return verdict(ok, reason, details), nil
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
			if _, err := regexp.Compile(c.Pattern); err != nil {
				return &abi.Error{Code: abi.CodeInvalidConfig, Field: "pattern", Message: "pattern: " + err.Error()}
			}
			return nil
		},
		Run: func(_ context.Context, _ sdk.Host, cfg *RegexMatchConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
			field := fieldOr(cfg.Field)
			text, _ := req.Case.Field(field)
			re := regexp.MustCompile(cfg.Pattern) // validated above
			loc := re.FindStringIndex(text)
			if loc == nil {
				return verdict(false, fmt.Sprintf("%s does not match /%s/", field, cfg.Pattern), nil), nil
			}
			return verdict(true, fmt.Sprintf("%s matches /%s/ at %d: %q", field, cfg.Pattern, loc[0], clip(text[loc[0]:loc[1]], 80)),
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
			hay := text
			if cfg.IgnoreCase {
				hay = strings.ToLower(hay)
			}
			var missing []string
			for _, s := range cfg.Substrings {
				needle := s
				if cfg.IgnoreCase {
					needle = strings.ToLower(needle)
				}
				if !strings.Contains(hay, needle) {
					missing = append(missing, s)
				}
			}
			if len(missing) > 0 {
				return verdict(false, fmt.Sprintf("%s lacks %d of %d substrings: %q", field, len(missing), len(cfg.Substrings), missing),
					map[string]any{"missing": missing}), nil
			}
			return verdict(true, fmt.Sprintf("%s contains all %d substrings", field, len(cfg.Substrings)), nil), nil
		},
	}
}

// checkJSON reports whether text is JSON and, when keys are given, an
// object with all of them.
func checkJSON(text, field string, keys []string) (ok bool, reason string, details map[string]any) {
	if !json.Valid([]byte(text)) {
		var v any
		err := json.Unmarshal([]byte(text), &v)
		msg := "invalid JSON"
		if err != nil {
			msg = err.Error()
		}
		d := map[string]any{"error": msg}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			d["offset"] = se.Offset
		}
		return false, fmt.Sprintf("%s is not valid JSON: %s", field, msg), d
	}
	if len(keys) == 0 {
		return true, field + " is valid JSON", nil
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return false, fmt.Sprintf("%s is valid JSON but not an object, so it cannot have keys %q", field, keys),
			map[string]any{"missing_keys": keys}
	}
	var missing []string
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return false, fmt.Sprintf("%s is a JSON object without keys %q", field, missing),
			map[string]any{"missing_keys": missing}
	}
	return true, fmt.Sprintf("%s is a JSON object with keys %q", field, keys), nil
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

// firstDifference is the index, in characters (runes), of the first
// position where a and b differ.
func firstDifference(a, b string, fold bool) int {
	i := 0
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb && !(fold && strings.EqualFold(string(ra), string(rb))) {
			return i
		}
		a, b = a[na:], b[nb:]
		i++
	}
	return i
}

// excerpt quotes up to 20 characters of s starting at character at, or
// says the text ended there.
func excerpt(s string, at int) string {
	// Rune by rune up to what is quoted, not the whole text: as
	// string([]rune(s)[at:at+20]) would give, invalid bytes as U+FFFD.
	i := 0
	for n := 0; n < at && i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return "end of text"
	}
	var quoted []byte
	for n := 0; n < 20 && i < len(s); n++ {
		r, size := utf8.DecodeRuneInString(s[i:])
		quoted = utf8.AppendRune(quoted, r)
		i += size
	}
	suffix := ""
	if i < len(s) {
		suffix = "…"
	}
	return quote(quoted) + suffix
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

// quote is fmt's %q of b (strconv.Quote): as is between quotes when every
// byte is printable ASCII other than '"' and '\\', which is the common
// case, strconv.Quote otherwise. FuzzExcerpt holds it to fmt.
func quote(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strconv.Quote(string(b))
		}
	}
	return `"` + string(b) + `"`
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

package assert

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/textmatch"
	"github.com/agentanvil/anvil/sdk"
)

// ValueConfig configures contains, icontains and starts_with.
type ValueConfig struct {
	Value string `json:"value" jsonschema:"required,minLength=1" jsonschema_description:"The text to look for in actual_output."`
}

// StartsWithConfig configures starts_with.
type StartsWithConfig struct {
	Value      string `json:"value" jsonschema:"required,minLength=1" jsonschema_description:"The text actual_output must start with."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema_description:"Compare lower-cased."`
}

// ValuesConfig configures contains_all and contains_any.
type ValuesConfig struct {
	Values     []string `json:"values" jsonschema:"required,minItems=1" jsonschema_description:"The texts to look for in actual_output; none may be empty."`
	IgnoreCase bool     `json:"ignore_case,omitempty" jsonschema_description:"Search lower-cased."`
}

// EqualsConfig configures equals.
type EqualsConfig struct {
	Value      string `json:"value,omitempty" jsonschema_description:"The text actual_output must equal. Empty or absent: the case's expected_output (then a case without one is skipped as missing_field)."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema_description:"Compare under Unicode simple case folding."`
	Trim       bool   `json:"trim,omitempty" jsonschema_description:"Ignore leading and trailing white space on both sides (DeepEval's ExactMatchMetric always strips)."`
}

// RegexConfig configures regex.
type RegexConfig struct {
	Pattern   string `json:"pattern" jsonschema:"required,minLength=1" jsonschema_description:"An RE2 regular expression (Go regexp syntax: no backreferences or lookaround; linear-time matching), at most 4096 bytes. (?i) makes it case-insensitive, (?s) lets . match newlines."`
	FullMatch bool   `json:"full_match,omitempty" jsonschema_description:"The pattern must match the whole of actual_output (DeepEval's PatternMatchMetric), not just somewhere in it (the default)."`
}

// IsJSONConfig configures is_json.
type IsJSONConfig struct {
	RequiredKeys []string `json:"required_keys,omitempty" jsonschema_description:"Top-level keys the JSON value must have (it must then be an object)."`
}

// LevenshteinConfig configures levenshtein.
type LevenshteinConfig struct {
	Value      string `json:"value,omitempty" jsonschema_description:"The text to compare actual_output with. Empty or absent: the case's expected_output."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema_description:"Compare lower-cased."`
	StrictMode bool   `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only for identical texts, else 0; the threshold is forced to 1."`
}

// TextDetails are MeasureResult.Details of the text kinds (each fills what
// applies).
type TextDetails struct {
	Kind string `json:"kind"`
	// Found and Missing are the values found in actual_output and not
	// (contains_all, contains_any), in the order configured.
	Found   []string `json:"found,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// FirstDifference is the character index where equals found the texts
	// to differ.
	FirstDifference *int `json:"first_difference,omitempty"`
	// MatchStart and MatchEnd are the byte offsets of regex's match.
	MatchStart *int `json:"match_start,omitempty"`
	MatchEnd   *int `json:"match_end,omitempty"`
	// Distance and Length are levenshtein's d and max(len), in characters.
	Distance *int   `json:"distance,omitempty"`
	Length   *int   `json:"length,omitempty"`
	Formula  string `json:"formula,omitempty"`
	// Error, Offset and MissingKeys are is_json's.
	Error       string   `json:"error,omitempty"`
	Offset      *int64   `json:"offset,omitempty"`
	MissingKeys []string `json:"missing_keys,omitempty"`
}

func validValue(field, v string) error {
	if v == "" {
		return invalid(field, "is empty (it would match every text)")
	}
	return nil
}

func validValues(values []string) error {
	if len(values) == 0 {
		return invalid("values", "must list at least one text")
	}
	for i, v := range values {
		if v == "" {
			return invalid("values", fmt.Sprintf("[%d] is empty (it would match every text)", i))
		}
	}
	return nil
}

func containsKind(name string, fold bool) *sdk.MetricKind[ValueConfig] {
	how := "contains"
	if fold {
		how = "contains, ignoring case,"
	}
	return &sdk.MetricKind[ValueConfig]{
		Name:           name,
		Description:    "1 when actual_output " + how + " value, else 0",
		RequiredFields: []string{abi.FieldActualOutput},
		Validate:       func(c *ValueConfig) error { return validValue("value", c.Value) },
		Prepare:        checkOnly[ValueConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *ValueConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			ok := textmatch.Contains(req.Case.ActualOutput, c.Value, fold)
			reason := "actual_output " + how + " " + textmatch.Quote([]byte(textmatch.Clip(c.Value, 80)))
			if !ok {
				reason = "actual_output does not contain " + textmatch.Quote([]byte(textmatch.Clip(c.Value, 80)))
				if fold {
					reason += ", ignoring case"
				}
			}
			return result(req, binaryScore(ok), false, reason, nil)
		},
	}
}

// ContainsKind returns the contains metric kind.
func ContainsKind() *sdk.MetricKind[ValueConfig] { return containsKind(KindContains, false) }

// IContainsKind returns the icontains (case-insensitive contains) metric kind.
func IContainsKind() *sdk.MetricKind[ValueConfig] { return containsKind(KindIContains, true) }

func containsSetKind(name string, all bool) *sdk.MetricKind[ValuesConfig] {
	desc := "1 when actual_output contains every one of values, else 0"
	if !all {
		desc = "1 when actual_output contains at least one of values, else 0"
	}
	return &sdk.MetricKind[ValuesConfig]{
		Name:           name,
		Description:    desc,
		RequiredFields: []string{abi.FieldActualOutput},
		Validate:       func(c *ValuesConfig) error { return validValues(c.Values) },
		Prepare:        checkOnly[ValuesConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *ValuesConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			found, missing := textmatch.Partition(req.Case.ActualOutput, c.Values, c.IgnoreCase)
			ok := len(missing) == 0
			if !all {
				ok = len(found) > 0
			}
			var reason string
			switch {
			case all && ok:
				reason = fmt.Sprintf("actual_output contains all %d values", len(c.Values))
			case all:
				reason = fmt.Sprintf("actual_output lacks %d of %d values: %q", len(missing), len(c.Values), missing)
			case ok:
				reason = fmt.Sprintf("actual_output contains %d of %d values: %q", len(found), len(c.Values), found)
			default:
				reason = fmt.Sprintf("actual_output contains none of %d values", len(c.Values))
			}
			return result(req, binaryScore(ok), false, reason, TextDetails{Kind: name, Found: found, Missing: missing})
		},
	}
}

// ContainsAllKind returns the contains_all metric kind.
func ContainsAllKind() *sdk.MetricKind[ValuesConfig] { return containsSetKind(KindContainsAll, true) }

// ContainsAnyKind returns the contains_any metric kind.
func ContainsAnyKind() *sdk.MetricKind[ValuesConfig] { return containsSetKind(KindContainsAny, false) }

// StartsWithKind returns the starts_with metric kind.
func StartsWithKind() *sdk.MetricKind[StartsWithConfig] {
	return &sdk.MetricKind[StartsWithConfig]{
		Name:           KindStartsWith,
		Description:    "1 when actual_output starts with value, else 0",
		RequiredFields: []string{abi.FieldActualOutput},
		Validate:       func(c *StartsWithConfig) error { return validValue("value", c.Value) },
		Prepare:        checkOnly[StartsWithConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *StartsWithConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			got := req.Case.ActualOutput
			if textmatch.HasPrefix(got, c.Value, c.IgnoreCase) {
				return result(req, 1, false, "actual_output starts with "+textmatch.Quote([]byte(textmatch.Clip(c.Value, 80))), nil)
			}
			return result(req, 0, false, "actual_output starts with "+textmatch.Excerpt(got, 0)+", not "+textmatch.Quote([]byte(textmatch.Clip(c.Value, 80))), nil)
		},
	}
}

// EqualsKind returns the equals metric kind.
func EqualsKind() *sdk.MetricKind[EqualsConfig] {
	return &sdk.MetricKind[EqualsConfig]{
		Name:           KindEquals,
		Description:    "1 when actual_output equals value (or expected_output), else 0",
		RequiredFields: []string{abi.FieldActualOutput},
		Fields: func(c *EqualsConfig) []string {
			if c.Value == "" {
				return []string{abi.FieldExpectedOutput}
			}
			return nil
		},
		Prepare: checkOnly[EqualsConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *EqualsConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			got, want, what := req.Case.ActualOutput, c.Value, "value"
			if want == "" {
				want, what = req.Case.ExpectedOutput, abi.FieldExpectedOutput
			}
			if c.Trim {
				got, want = strings.TrimSpace(got), strings.TrimSpace(want)
			}
			if textmatch.Equal(got, want, c.IgnoreCase) {
				return result(req, 1, false, "actual_output equals "+what, nil)
			}
			at := textmatch.FirstDifference(got, want, c.IgnoreCase)
			reason := "actual_output differs from " + what + " at character " + fmt.Sprint(at) +
				": got " + textmatch.Excerpt(got, at) + ", want " + textmatch.Excerpt(want, at)
			return result(req, 0, false, reason, TextDetails{Kind: KindEquals, FirstDifference: &at})
		},
	}
}

// RegexKind returns the regex metric kind.
func RegexKind() *sdk.MetricKind[RegexConfig] {
	var cache compiled[*regexp.Regexp]
	compile := func(c *RegexConfig) (*regexp.Regexp, error) {
		src := c.Pattern
		if c.FullMatch {
			// A group, so an alternation stays inside the anchors.
			src = `^(?:` + c.Pattern + `)$`
		}
		return cache.get(src, func(string) (*regexp.Regexp, error) {
			// The user's pattern is checked (and its size bounded) as
			// written; the anchored form only wraps it.
			if _, err := textmatch.CompilePattern(c.Pattern); err != nil {
				return nil, invalid("pattern", err.Error())
			}
			return regexp.Compile(src)
		})
	}
	return &sdk.MetricKind[RegexConfig]{
		Name:           KindRegex,
		Description:    "1 when the RE2 pattern matches actual_output (somewhere, or all of it with full_match), else 0",
		RequiredFields: []string{abi.FieldActualOutput},
		Validate: func(c *RegexConfig) error {
			_, err := compile(c)
			return err
		},
		Prepare: checkOnly[RegexConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *RegexConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			re, err := compile(c)
			if err != nil {
				return nil, err
			}
			text := req.Case.ActualOutput
			how := "matches"
			if c.FullMatch {
				how = "matches all of"
			}
			loc := re.FindStringIndex(text)
			if loc == nil {
				return result(req, 0, false, "pattern /"+c.Pattern+"/ "+strings.Replace(how, "matches", "does not match", 1)+" actual_output", nil)
			}
			reason := fmt.Sprintf("pattern /%s/ %s actual_output at byte %d: %s", c.Pattern, how, loc[0],
				textmatch.Quote([]byte(textmatch.Clip(text[loc[0]:loc[1]], 80))))
			return result(req, 1, false, reason, TextDetails{Kind: KindRegex, MatchStart: &loc[0], MatchEnd: &loc[1]})
		},
	}
}

// IsJSONKind returns the is_json metric kind.
func IsJSONKind() *sdk.MetricKind[IsJSONConfig] {
	return &sdk.MetricKind[IsJSONConfig]{
		Name:           KindIsJSON,
		Description:    "1 when actual_output is valid JSON (an object with required_keys, if given), else 0",
		RequiredFields: []string{abi.FieldActualOutput},
		Prepare:        checkOnly[IsJSONConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *IsJSONConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			chk := textmatch.CheckJSON(req.Case.ActualOutput, abi.FieldActualOutput, c.RequiredKeys)
			var d any
			if !chk.OK {
				td := TextDetails{Kind: KindIsJSON}
				if e, ok := chk.Details["error"].(string); ok {
					td.Error = e
				}
				if o, ok := chk.Details["offset"].(int64); ok {
					td.Offset = &o
				}
				if k, ok := chk.Details["missing_keys"].([]string); ok {
					td.MissingKeys = k
				}
				d = td
			}
			return result(req, binaryScore(chk.OK), false, chk.Reason, d)
		},
	}
}

// LevenshteinKind returns the levenshtein metric kind.
func LevenshteinKind() *sdk.MetricKind[LevenshteinConfig] {
	return &sdk.MetricKind[LevenshteinConfig]{
		Name:           KindLevenshtein,
		Description:    "Normalised Levenshtein similarity 1 − d/max(len) in [0,1] between actual_output and value (or expected_output), in characters",
		RequiredFields: []string{abi.FieldActualOutput},
		Fields: func(c *LevenshteinConfig) []string {
			if c.Value == "" {
				return []string{abi.FieldExpectedOutput}
			}
			return nil
		},
		Prepare: checkOnly[LevenshteinConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *LevenshteinConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			got, want, what := req.Case.ActualOutput, c.Value, "value"
			if want == "" {
				want, what = req.Case.ExpectedOutput, abi.FieldExpectedOutput
			}
			if c.IgnoreCase {
				got, want = strings.ToLower(got), strings.ToLower(want)
			}
			d, n, err := textmatch.Levenshtein(got, want)
			if err != nil {
				return nil, abi.Errorf(abi.CodeMetric, "levenshtein: actual_output against %s: %v", what, err)
			}
			sim := textmatch.Similarity(d, n)
			formula := fmt.Sprintf("1 − d/max(len) = 1 − %d/%d = %s", d, n, formatScore(sim))
			if n == 0 {
				formula = "both texts empty: 1"
			}
			score := sim
			if c.StrictMode {
				score = binaryScore(d == 0)
				formula += "; strict_mode: 1 only if identical → " + formatScore(score)
			}
			reason := fmt.Sprintf("actual_output is %d edit(s) from %s over %d characters: similarity %s", d, what, n, formatScore(sim))
			return result(req, score, c.StrictMode, reason, TextDetails{Kind: KindLevenshtein, Distance: &d, Length: &n, Formula: formula})
		},
	}
}

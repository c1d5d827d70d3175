//go:build wasip1

// Command kwcov-go is the shared example metric (examples/kwcov) in Go: one
// metric kind, keyword_coverage, the fraction of configured keywords found
// in actual_output, optionally checked by the judge. Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o kwcov-go.wasm ./examples/kwcov/go
//
// (scripts/build-plugins builds it to bin/wasm/kwcov-go.wasm with its
// .sha256.)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/guest"
)

// Config is the kind's config.
type Config struct {
	Keywords      []string `json:"keywords" jsonschema:"required,minItems=1"`
	CaseSensitive bool     `json:"case_sensitive,omitempty"`
	JudgeCheck    bool     `json:"judge_check,omitempty"`
}

func validate(c *Config) error {
	if len(c.Keywords) == 0 {
		return &abi.Error{Code: abi.CodeInvalidConfig, Field: "keywords", Message: "keywords: at least one keyword is required"}
	}
	for i, k := range c.Keywords {
		if k == "" {
			return &abi.Error{Code: abi.CodeInvalidConfig, Field: "keywords",
				Message: fmt.Sprintf("keywords[%d] is empty", i)}
		}
	}
	return nil
}

// lowerASCII lowers A-Z only, so every language agrees byte for byte.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var verdictSchema = []byte(`{"type":"object","properties":{"verdict":{"type":"boolean"}},"required":["verdict"],"additionalProperties":false}`)

func measure(ctx context.Context, h sdk.Host, c *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	out := req.Case.ActualOutput
	if !c.CaseSensitive {
		out = lowerASCII(out)
	}
	found, missing := []string{}, []string{}
	for _, k := range c.Keywords {
		probe := k
		if !c.CaseSensitive {
			probe = lowerASCII(k)
		}
		if strings.Contains(out, probe) {
			found = append(found, k)
		} else {
			missing = append(missing, k)
		}
	}
	score := float64(len(found)) / float64(len(c.Keywords))
	reason := fmt.Sprintf("found %d of %d keywords", len(found), len(c.Keywords))
	if len(missing) > 0 {
		reason += "; missing: " + strings.Join(missing, ", ")
	}
	details := map[string]any{"found": found, "missing": missing}
	if c.JudgeCheck {
		zero := 0.0
		prompt := "Does the following answer use these keywords in a meaningful way? Keywords: " +
			strings.Join(c.Keywords, ", ") + "\n\nAnswer:\n" + req.Case.ActualOutput +
			"\n\nReturn only a JSON object {\"verdict\": true|false}."
		r, jerr := sdk.JudgeOne(ctx, h, abi.JudgeRequest{
			Messages:    []abi.Message{{Role: "user", Content: prompt}},
			Schema:      verdictSchema,
			SchemaName:  "keyword_check",
			Purpose:     "keyword_check",
			Temperature: &zero,
		})
		if jerr != nil {
			return nil, jerr // its code (judge_error, capability_denied, budget_exhausted) is kept
		}
		raw := r.JSON
		if len(raw) == 0 {
			raw = json.RawMessage(r.Content)
		}
		var v struct {
			Verdict *bool `json:"verdict"`
		}
		if err := json.Unmarshal(raw, &v); err != nil || v.Verdict == nil {
			return nil, abi.Errorf(abi.CodeJudge, "keyword_check: the judge's reply has no boolean verdict: %q", r.Content)
		}
		details["judge"] = *v.Verdict
		if !*v.Verdict {
			score /= 2
			reason += "; judge: not meaningful"
		}
	}
	d, err := json.Marshal(details)
	if err != nil {
		return nil, err
	}
	return &abi.MeasureResult{Score: &score, Success: score >= req.Threshold, Threshold: req.Threshold,
		Reason: reason, Details: d}, nil
}

// Plugin is kwcov-go.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{Name: "kwcov-go", Version: "0.1.0", Capabilities: []abi.Capability{abi.CapJudge},
		Kinds: []sdk.Kind{&sdk.MetricKind[Config]{
			Name:           "keyword_coverage",
			Description:    "Fraction of the configured keywords found in actual_output; optionally checked by the judge.",
			RequiredFields: []string{"actual_output"},
			Validate:       validate,
			Measure:        measure,
		}}}
}

func init() { guest.Serve(Plugin()) }

func main() {}

// Package similarity provides Anvil's embedding-similarity metric kind:
// "similarity", the cosine of the embeddings of actual_output and a
// reference text (params value, else the case's expected_output), both
// embedded through the host's judge layer (the anvil_embed host function,
// ABI minor 5), so the vectors are cached per text and counted, limited
// and priced like judge calls.
//
// Score: the cosine clipped to [0,1] (max(0, cos)); the raw cosine is in
// the details and the reason. The threshold applies to the score as
// usual. docs/metrics.md has the formula and what differs from
// promptfoo's `similar` and DeepEval.
//
// Invariants: the only capability asked is judge, and the only host call
// is one embed request of two texts per case; apart from the vectors the
// score is a pure function of the case and params. A vector that is zero
// or of a different length than the other is a metric error, never a
// score.
package similarity

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Names and version of the plugin and its kind.
const (
	PluginName = "similarity"
	Version    = "1.0.0"
	Kind       = "similarity"
)

// Config configures similarity.
type Config struct {
	Value string `json:"value,omitempty" jsonschema_description:"The reference text actual_output is compared with. Empty or absent: the case's expected_output."`
}

// Details are MeasureResult.Details of similarity.
type Details struct {
	Kind string `json:"kind"`
	// Cosine is the cosine of the two embeddings, in [-1,1].
	Cosine     *float64 `json:"cosine,omitempty"`
	Dimensions int      `json:"dimensions,omitempty"`
	// Reference says what actual_output was compared with: "value" or
	// "expected_output".
	Reference string `json:"reference"`
	Formula   string `json:"formula"`
}

// Plugin returns the similarity plugin, for linking into the host or
// serving from a Wasm module.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         PluginName,
		Version:      Version,
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds:        []sdk.Kind{SimilarityKind()},
	}
}

// SimilarityKind returns the similarity metric kind.
func SimilarityKind() *sdk.MetricKind[Config] {
	return &sdk.MetricKind[Config]{
		Name:           Kind,
		Description:    "Cosine similarity of the embeddings of actual_output and value (or expected_output), through the judge's embedding_model, clipped to [0,1]",
		RequiredFields: []string{abi.FieldActualOutput},
		Fields: func(c *Config) []string {
			if c.Value == "" {
				return []string{abi.FieldExpectedOutput}
			}
			return nil
		},
		Measure: measure,
	}
}

func measure(ctx context.Context, h sdk.Host, c *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	got, want, what := req.Case.ActualOutput, c.Value, "value"
	if want == "" {
		want, what = req.Case.ExpectedOutput, abi.FieldExpectedOutput
	}
	d := Details{Kind: Kind, Reference: what}
	vecs, err := sdk.Embed(ctx, h, abi.EmbedRequest{Texts: []string{got, want}, Purpose: "similarity"})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 2 {
		return nil, abi.Errorf(abi.CodeMetric, "similarity: the host answered %d vectors for 2 texts", len(vecs))
	}
	cos, err := Cosine(vecs[0], vecs[1])
	if err != nil {
		return nil, abi.Errorf(abi.CodeMetric, "similarity: actual_output against %s: %v", what, err)
	}
	score := Score(cos)
	d.Cosine, d.Dimensions = &cos, len(vecs[0])
	d.Formula = fmt.Sprintf("max(0, cos) = max(0, %s) = %s", formatScore(cos), formatScore(score))
	reason := fmt.Sprintf("cosine similarity of the embeddings of actual_output and %s: %s", what, formatScore(cos))
	if cos < 0 {
		reason += " (negative: scored 0)"
	}
	return result(req, score, reason, d)
}

// Cosine is a·b / (|a| |b|), clamped to [-1,1] against rounding. Vectors
// of different lengths, empty, zero or not finite have no cosine.
func Cosine(a, b []float64) (float64, error) {
	switch {
	case len(a) == 0 || len(b) == 0:
		return 0, fmt.Errorf("an embedding is empty")
	case len(a) != len(b):
		return 0, fmt.Errorf("embeddings of %d and %d dimensions", len(a), len(b))
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0, fmt.Errorf("an embedding is the zero vector")
	}
	cos := dot / (math.Sqrt(na) * math.Sqrt(nb))
	if math.IsNaN(cos) || math.IsInf(cos, 0) {
		return 0, fmt.Errorf("the cosine is not finite")
	}
	return max(-1, min(1, cos)), nil
}

// Score maps a cosine to the metric's score: max(0, cos).
func Score(cos float64) float64 { return max(0, cos) }

func result(req *abi.MeasureRequest, score float64, reason string, details Details) (*abi.MeasureResult, error) {
	b, err := json.Marshal(details)
	if err != nil {
		return nil, err
	}
	return &abi.MeasureResult{Score: &score, Success: score >= req.Threshold, Threshold: req.Threshold, Reason: reason, Details: b}, nil
}

// formatScore prints a number with at most 4 significant digits.
func formatScore(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

package sdk

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// BenchmarkConfigReuse is a G-Eval-shaped config (slices, pointers, a
// slice of structs) handed to a kind per call: decoded once, then copied.
func BenchmarkConfigReuse(b *testing.B) {
	type band struct {
		ScoreRange      []int  `json:"score_range"`
		ExpectedOutcome string `json:"expected_outcome"`
	}
	type cfg struct {
		Name             string   `json:"name"`
		Criteria         string   `json:"criteria"`
		EvaluationSteps  []string `json:"evaluation_steps"`
		EvaluationParams []string `json:"evaluation_params"`
		Rubric           []band   `json:"rubric"`
		ScoreRange       []int    `json:"score_range"`
		StrictMode       bool     `json:"strict_mode"`
		TopLogprobs      *int     `json:"top_logprobs"`
		Samples          int      `json:"samples"`
		Reason           *bool    `json:"reason"`
	}
	raw := json.RawMessage(`{"name":"correctness","criteria":"Is the actual output correct and complete compared with the expected output?","evaluation_params":["input","actual_output","expected_output"],"rubric":[{"score_range":[0,4],"expected_outcome":"wrong"},{"score_range":[5,10],"expected_outcome":"right"}],"top_logprobs":20,"reason":true}`)
	k := &MetricKind[cfg]{Name: "k", Measure: func(context.Context, Host, *cfg, *abi.MeasureRequest) (*abi.MeasureResult, error) {
		return nil, nil
	}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.config(raw); err != nil {
			b.Fatal(err)
		}
	}
}

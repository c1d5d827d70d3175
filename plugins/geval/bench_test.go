package geval_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/sdk"
)

// cannedHost is an sdk.Host whose judge gives every request the same
// weighted reply: Measure's own cost, without a judge's.
type cannedHost struct{ resp abi.JudgeResponse }

func (h cannedHost) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	out := make([]abi.JudgeResponse, len(reqs))
	for i := range out {
		out[i] = h.resp
	}
	return out, nil
}

func (cannedHost) Log(context.Context, slog.Level, string, ...any) {}

func newCannedHost() cannedHost {
	b := []byte(`{"reason":"The answer names the capital correctly, and the population figure is close enough.","score":8}`)
	return cannedHost{abi.JudgeResponse{Content: string(b), JSON: b,
		Score: &abi.ScoreResult{Raw: 8, Value: 7.8, Mode: abi.ScoreWeighted,
			Candidates: []abi.ScoreCandidate{{Value: 7, Probability: 0.3}, {Value: 8, Probability: 0.6}, {Value: 9, Probability: 0.1}}},
		Usage: abi.Usage{Model: "judge-1", InputTokens: 420, OutputTokens: 31, USD: 0.0012}}}
}

// benchGevalConfigs are a criteria metric (prepared steps) and a rubric
// metric with provided steps.
var benchGevalConfigs = []struct {
	name, config, prepared string
}{
	{"criteria", `{"name":"Correctness","description":"Is the answer right?","criteria":"The answer is correct and concise.","evaluation_params":["input","actual_output","expected_output"]}`,
		`{"steps":["Read the input and identify what is asked.","Compare the actual output with the expected output for factual agreement.","Penalise padding and unsupported claims.","Decide how fully the actual output answers the input."],"source":"generated"}`},
	{"rubric", `{"name":"Helpfulness","evaluation_steps":["Check the answer addresses the question.","Check it is accurate."],"evaluation_params":["input","actual_output"],"rubric":[{"score_range":[0,3],"expected_outcome":"Unhelpful or wrong."},{"score_range":[4,7],"expected_outcome":"Partly helpful."},{"score_range":[8,10],"expected_outcome":"Helpful and accurate."}]}`,
		`{"steps":["Check the answer addresses the question.","Check it is accurate."],"source":"provided"}`},
}

var benchGevalCase = abi.TestCase{ID: "case-000001",
	Input:          "What is the capital of France, and roughly how many people live there?",
	ActualOutput:   "Paris is the capital of France. About 2.1 million people live in the city proper, and over 12 million in its metropolitan area.",
	ExpectedOutput: "Paris; about 2 million (city), 12 million (metro).",
}

// BenchmarkMeasure is one G-Eval Measure call through the SDK, against a
// judge that answers at once: the kind's own CPU per case.
func BenchmarkMeasure(b *testing.B) {
	h := newCannedHost()
	for _, bc := range benchGevalConfigs {
		b.Run(bc.name, func(b *testing.B) {
			p := geval.Plugin()
			req := &abi.MeasureRequest{Kind: "geval", Metric: "m", Config: json.RawMessage(bc.config),
				Prepared: json.RawMessage(bc.prepared), Threshold: 0.5, JudgeModel: "judge-1", Case: benchGevalCase}
			var _ sdk.Host = h
			b.ReportAllocs()
			for b.Loop() {
				res := p.Measure(context.Background(), h, req)
				if res.Error != nil {
					b.Fatal(res.Error)
				}
			}
		})
	}
}

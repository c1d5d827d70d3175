package plugin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/geval"
)

// cannedJudge is Services whose judge gives every request the same
// weighted G-Eval reply, at once.
type cannedJudge struct{ resp abi.JudgeResponse }

func (s cannedJudge) Judge(_ context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	out := make([]abi.JudgeResponse, len(reqs))
	for i := range out {
		out[i] = s.resp
	}
	return out
}

func (cannedJudge) Log(context.Context, string, abi.LogRecord) {}

func newCannedJudge() cannedJudge {
	b := []byte(`{"reason":"The answer names the capital correctly, and the population figure is close enough.","score":8}`)
	return cannedJudge{abi.JudgeResponse{Content: string(b), JSON: b,
		Score: &abi.ScoreResult{Raw: 8, Value: 7.8, Mode: abi.ScoreWeighted,
			Candidates: []abi.ScoreCandidate{{Value: 7, Probability: 0.3}, {Value: 8, Probability: 0.6}, {Value: 9, Probability: 0.1}}},
		Usage: abi.Usage{Model: "judge-1", InputTokens: 420, OutputTokens: 31, USD: 0.0012}}}
}

// gevalBenchRequest is a prepared criteria metric's request for one case.
func gevalBenchRequest() *abi.MeasureRequest {
	return &abi.MeasureRequest{Kind: "geval", Metric: "correctness",
		Config:    json.RawMessage(`{"name":"Correctness","description":"Is the answer right?","criteria":"The answer is correct and concise.","evaluation_params":["input","actual_output","expected_output"]}`),
		Prepared:  json.RawMessage(`{"steps":["Read the input and identify what is asked.","Compare the actual output with the expected output for factual agreement.","Penalise padding and unsupported claims.","Decide how fully the actual output answers the input."],"source":"generated"}`),
		Threshold: 0.5, JudgeModel: "judge-1",
		Case: abi.TestCase{ID: "case-000001",
			Input:          "What is the capital of France, and roughly how many people live there?",
			ActualOutput:   "Paris is the capital of France. About 2.1 million people live in the city proper, and over 12 million in its metropolitan area.",
			ExpectedOutput: "Paris; about 2 million (city), 12 million (metro).",
		}}
}

// BenchmarkMeasureGeval is one G-Eval call through the in-process
// transport (guard, kind, output cap) against a judge that answers at
// once: the host CPU per case that is not the judge's.
func BenchmarkMeasureGeval(b *testing.B) {
	ctx := context.Background()
	p := Inproc(geval.Plugin(), Options{Grants: Grants{Judge: true}})
	svc := newCannedJudge()
	req := gevalBenchRequest()
	for _, par := range []bool{false, true} {
		name := "inproc/geval"
		if par {
			name += "-parallel"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			call := func() {
				res, err := p.Measure(ctx, svc, req)
				if err != nil || res.Error != nil || res.Score == nil {
					b.Fatalf("%v / %+v", err, res)
				}
			}
			runCPUMeasured(b, par, call)
		})
	}
}

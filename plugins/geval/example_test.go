package geval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/geval"
)

// exampleHost stands in for the Anvil host: its judge answers the steps
// request and weights a score of 8 by made-up log-probabilities.
type exampleHost struct{}

func (exampleHost) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		switch r.Purpose {
		case geval.PurposeSteps:
			out[i].JSON = json.RawMessage(`{"steps":["Compare the actual output with the input question.","Penalise factual errors."]}`)
		case geval.PurposeScore:
			out[i].JSON = json.RawMessage(`{"reason":"Correct capital, no padding.","score":8}`)
			out[i].Score = &abi.ScoreResult{Raw: 8, Value: 8.3, Mode: abi.ScoreWeighted,
				Candidates: []abi.ScoreCandidate{{Value: 8, Probability: 0.7}, {Value: 9, Probability: 0.3}}}
		}
	}
	return out, nil
}

func (exampleHost) Log(context.Context, slog.Level, string, ...any) {}

// Prepare once per run (the steps are generated here), then Measure each case.
func ExamplePlugin() {
	p := geval.Plugin()
	ctx := context.Background()
	cfg := json.RawMessage(`{"criteria":"The answer is factually correct.","evaluation_params":["input","actual_output"]}`)

	pr := p.Prepare(ctx, exampleHost{}, &abi.PrepareRequest{Kind: "geval", Metric: "correctness", Config: cfg})
	fmt.Println("prepared:", string(pr.State))

	res := p.Measure(ctx, exampleHost{}, &abi.MeasureRequest{
		Kind: "geval", Metric: "correctness", Config: cfg, Prepared: pr.State, Threshold: 0.7,
		Case: abi.TestCase{ID: "1", Input: "Capital of France?", ActualOutput: "Paris."},
	})
	fmt.Printf("score %.2f (%s), success %v: %s\n", *res.Score, res.ScoreMode, res.Success, res.Reason)
	// Output:
	// prepared: {"steps":["Compare the actual output with the input question.","Penalise factual errors."],"source":"generated"}
	// score 0.83 (weighted), success true: Correct capital, no padding.
}

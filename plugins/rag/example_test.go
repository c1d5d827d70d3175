package rag_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/rag"
)

// exampleHost stands in for the Anvil host: its judge answers by purpose.
type exampleHost struct{}

func (exampleHost) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		switch r.Purpose {
		case rag.PurposeStatements:
			out[i].JSON = json.RawMessage(`{"statements":["Paris is the capital of France.","Paris has great food.","Paris is in Europe."]}`)
		case rag.PurposeVerdicts:
			out[i].JSON = json.RawMessage(`{"verdicts":[{"verdict":"yes","reason":""},{"verdict":"no","reason":"Food does not answer the question."},{"verdict":"idk","reason":"Context, not an answer."}]}`)
		}
	}
	return out, nil
}

func (exampleHost) Log(context.Context, slog.Level, string, ...any) {}

// Answer relevancy of one case: two judge calls (statements, then one
// batched verdict call); the reason is built from the failing statement.
func ExamplePlugin() {
	res := rag.Plugin().Measure(context.Background(), exampleHost{}, &abi.MeasureRequest{
		Kind: rag.KindAnswerRelevancy, Metric: "relevancy", Threshold: 0.5,
		Case: abi.TestCase{ID: "1", Input: "What is the capital of France?",
			ActualOutput: "Paris is the capital of France. It has great food, and it is in Europe."},
	})
	var d rag.Details
	_ = json.Unmarshal(res.Details, &d)
	fmt.Printf("score %.4f, success %v\n", *res.Score, res.Success)
	fmt.Println(d.Formula)
	fmt.Println(res.Reason)
	// Output:
	// score 0.6667, success true
	// (yes + idk) / n = (1 + 1) / 3 = 0.6667
	// 2 of 3 statements count as relevant to the input (1 "idk" counted as passing). Failing statements: [2] "Paris has great food." (no: Food does not answer the question.).
}

package dag_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/dag"
)

// exampleHost stands in for the Anvil host: its judge answers by purpose.
type exampleHost struct{}

func (exampleHost) Judge(_ context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		switch r.Purpose {
		case dag.KindTask:
			out[i].JSON = json.RawMessage(`{"output":"Intro, Findings, Conclusion"}`)
		case dag.KindBinary:
			out[i].JSON = json.RawMessage(`{"reason":"All three headings are present.","verdict":true}`)
		}
	}
	return out, nil
}

func (exampleHost) Log(context.Context, slog.Level, string, ...any) {}

// A task node extracts the headings; a binary node judges them. The host's
// DAG scheduler does this wiring; here it is done by hand.
func ExamplePlugin() {
	p := dag.Plugin()
	ctx := context.Background()
	c := abi.TestCase{ID: "1", ActualOutput: "# Intro\n...\n# Findings\n...\n# Conclusion\n..."}

	task := p.Node(ctx, exampleHost{}, &abi.NodeRequest{
		Kind: dag.KindTask, NodeID: "headings", Case: c,
		Config: json.RawMessage(`{"instructions":"List the headings of the actual output.","output_label":"Headings","params":["actual_output"]}`),
	})
	fmt.Println("task output:", task.Output)

	gate := p.Node(ctx, exampleHost{}, &abi.NodeRequest{
		Kind: dag.KindBinary, NodeID: "has_all", Case: c, Verdicts: dag.BinaryVerdicts,
		Config: json.RawMessage(`{"criteria":"Are Intro, Findings and Conclusion all present?"}`),
		Inputs: []abi.NodeInput{{NodeID: "headings", Label: "Headings", Output: task.Output}},
	})
	fmt.Println("verdict:", gate.Verdict, "-", gate.Reason)
	// Output:
	// task output: Intro, Findings, Conclusion
	// verdict: true - All three headings are present.
}

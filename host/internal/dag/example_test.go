package dag_test

import (
	"context"
	"fmt"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/dag"
)

// answers is a Runner that answers from a table, as a judge would.
type answers map[string]string

func (a answers) RunNode(_ context.Context, n *dag.Node, inputs []abi.NodeInput, verdicts []string) (dag.NodeOutcome, error) {
	if n.Class.Produces() {
		return dag.NodeOutcome{NodeResult: abi.NodeResult{Output: a[n.ID]}}, nil
	}
	return dag.NodeOutcome{NodeResult: abi.NodeResult{Verdict: a[n.ID], Reason: fmt.Sprintf("read %d inputs", len(inputs))}}, nil
}

func (a answers) RunMetric(context.Context, string) (dag.MetricOutcome, error) {
	return dag.MetricOutcome{Score: 0.9, Success: true}, nil
}

func ExampleEvaluate() {
	spec, err := dag.ParseYAML([]byte(`
nodes:
  - id: gate
    kind: json_valid
    verdicts:
      "false": {score: 0}
      "true": {then: extract}
  - id: extract
    kind: task
    instructions: Extract every claim the answer makes.
    output_label: Claims
    params: [actual_output]
    children: [supported]
  - id: supported
    kind: binary
    criteria: Is every claim supported by the context?
    params: [context]
    verdicts:
      "true": {metric: helpfulness}
      "false": {score: 2}
`), "anvil.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	env := dag.Env{
		NodeKinds: map[string]abi.KindDescriptor{
			"task":       {Name: "task", Role: abi.RoleNode},
			"binary":     {Name: "binary", Role: abi.RoleNode},
			"json_valid": {Name: "json_valid", Role: abi.RoleNode, Verdicts: []string{"false", "true"}},
		},
		Metrics: map[string]bool{"helpfulness": true},
		Self:    "grounded",
	}
	g, _, err := dag.Validate(spec, env)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fields:", g.RequiredFields())

	for _, run := range []answers{
		{"gate": "false"},
		{"gate": "true", "extract": "1. Paris is in France.", "supported": "false"},
		{"gate": "true", "extract": "1. Paris is in France.", "supported": "true"},
	} {
		res, err := dag.Evaluate(context.Background(), g, run)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%.2f %v %s\n", res.Score, res.Path, res.Reason)
	}
	// Output:
	// fields: [actual_output context]
	// 0.00 [gate] gate=false (score 0/10)
	// 0.20 [gate extract supported] gate=true → extract → supported=false (score 2/10)
	// 0.90 [gate extract supported] gate=true → extract → supported=true (metric helpfulness 0.90)
}

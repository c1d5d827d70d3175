package dag

import (
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite golden files")

// renderGraph has every shape: task, code task, binary, choice, code node,
// score and metric leaves, data and control edges, a shared node.
const renderGraph = `
nodes:
  - id: gate
    kind: json_valid
    verdicts:
      "false": {score: 0}
      "true": {then: extract}
  - id: extract
    kind: task
    instructions: Extract every claim.
    output_label: Claims
    params: [actual_output]
    children: [has_answer, notes]
  - id: notes
    kind: summarise
    children: [tone]
  - id: has_answer
    kind: binary
    criteria: Does the answer address the question?
    verdicts:
      "true": {metric: helpfulness}
      "false": {score: 2}
  - id: tone
    kind: choice
    criteria: What is the "tone" <of> it?
    verdicts:
      formal: {score: 10}
      casual: {score: 6.5}
      '"odd" <one> #1': {score: 5}
      rude: {then: escalate}
  - id: escalate
    kind: traffic
    verdicts:
      red: {score: 0}
      amber: {score: 3}
      green: {metric: fluency}
`

func TestRenderGolden(t *testing.T) {
	spec, err := ParseYAML([]byte(renderGraph), "render.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, warnings, err := Validate(spec, testEnv())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v warnings %q", err, warnings)
	}
	r := &script{
		verdicts: map[string]string{"gate": "true", "has_answer": "true", "tone": "rude", "escalate": "amber"},
		metrics:  map[string]float64{"helpfulness": 0.8},
	}
	res, err := Evaluate(context.Background(), g, r)
	if err != nil {
		t.Fatal(err)
	}
	if joined(res.Path) != "gate,extract,notes,has_answer,tone,escalate" || res.Score != 0.3 {
		t.Fatalf("score %v path %v", res.Score, res.Path)
	}
	testkit.Golden(t, filepath.Join("testdata", "render.golden"), []byte(Render(g, nil)), *update)
	testkit.Golden(t, filepath.Join("testdata", "render_path.golden"), []byte(Render(g, res)), *update)
	if a, b := Render(g, res), Render(g, res); a != b {
		t.Error("Render is not deterministic")
	}
}

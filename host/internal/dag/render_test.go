package dag

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
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
	golden(t, "render.golden", Render(g, nil))
	golden(t, "render_path.golden", Render(g, res))
	if a, b := Render(g, res), Render(g, res); a != b {
		t.Error("Render is not deterministic")
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

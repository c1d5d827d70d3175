package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// validate --json names a cascade's judges and band, and its judge of
// record (the last judge).
func TestValidateJSONNamesACascade(t *testing.T) {
	dir := t.TempDir()
	cfg := `version: 1
dataset: cases.jsonl
judges:
  cheap: {model: cheap-model, api_key_env: NO_SUCH_KEY}
  strong: {model: strong-model, api_key_env: NO_SUCH_KEY}
metrics:
  - name: correctness
    kind: geval
    judge_cascade: [cheap, strong]
    samples: {max: 6, stop_at_ci_width: 0.1}
    params: {criteria: "Is it right?", evaluation_params: [input, actual_output]}
`
	os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(dir, "cases.jsonl"), []byte(`{"id": "a", "input": "q", "actual_output": "a"}`+"\n"), 0o644)
	r := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml", "--json")
	rep := decodeJSON[validateReport](t, r)
	if r.code != exitOK || len(rep.Metrics) != 1 {
		t.Fatalf("validate --json: exit %d, %+v\n%s", r.code, rep, r.stderr)
	}
	m := rep.Metrics[0]
	if m.Judge != "strong" || !slices.Equal(m.JudgeCascade, []string{"cheap", "strong"}) || !slices.Equal(m.EscalateBand, []float64{0.15, 0.85}) || m.Samples != 6 {
		t.Errorf("metric = %+v; want judge strong, cascade [cheap strong], band [0.15 0.85], samples 6", m)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// calibrate takes its labels from a file or from a reference run, one of
// the two.
func TestCalibrateLabelsFromRunFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "--labels", "l.jsonl", "--labels-from-run", "ref"}, "give --labels or --labels-from-run, not both"},
		{[]string{"calibrate"}, "--labels is required (a JSONL file of human labels), or --labels-from-run RUN_DIR (another run's verdicts)"},
		{[]string{"calibrate", "--labels-from-run", "no-such-run"}, "reference run no-such-run:"},
	} {
		r := runBinary(t, dir, nil, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/judgetest"
)

// TestValidateIsAsStrictAsRun: what run refuses, validate refuses (exit 2,
// no judge key, no judge call), and what run warns about, validate warns
// about; run refuses it before its first judge call.
func TestValidateIsAsStrictAsRun(t *testing.T) {
	const cases = 3
	for _, tc := range []struct {
		name   string
		params string // the G-Eval metric's params, YAML flow
		code   int    // of validate and of run
		want   []string
		calls  int // judge calls by run over the cases
	}{
		{"criteria and steps: the steps win, with a warning",
			`{criteria: "Is it correct?", evaluation_steps: [Compare with the expected output.], evaluation_params: [input, actual_output, expected_output]}`,
			exitOK, []string{"criteria ignored"}, cases},
		{"misspelt evaluation_params field",
			`{evaluation_steps: [Compare with the expected output.], evaluation_params: [input, expected_outptu]}`,
			exitUsage, []string{"anvil.yaml:", "metric correctness", `"expected_outptu"`, "did you mean expected_output?"}, 0},
		{"the kind's own check: one sample",
			`{evaluation_steps: [Compare with the expected output.], evaluation_params: [input, actual_output], samples: 1}`,
			exitUsage, []string{"anvil.yaml:6: metric correctness: params.samples:", "samples is 1"}, 0},
		{"criteria only: validate asks the judge for no steps",
			`{criteria: "Is it correct?", evaluation_params: [input, actual_output, expected_output]}`,
			exitOK, nil, cases + 1},
		{"correct config",
			`{evaluation_steps: [Compare with the expected output.], evaluation_params: [input, actual_output, expected_output]}`,
			exitOK, nil, cases},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := quickstart(t)
			cfg := fmt.Sprintf(`version: 1
dataset: cases.jsonl
judges:
  default: {supports_logprobs: true, supports_json_schema: true}
metrics:
  - name: correctness
    kind: geval
    threshold: 0.5
    params: %s
`, tc.params)
			if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			srv := judgetest.New(t)
			geval(srv)
			// validate: no key and no judge URL in its environment.
			v := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml")
			// With a judge at hand, validate still calls it for nothing.
			if vj := runBinary(t, dir, judgeEnv(srv), "validate", "-c", "anvil.yaml"); vj.code != tc.code || srv.Calls() != 0 {
				t.Errorf("validate with a judge: exit %d, %d judge calls; want %d, 0\n%s", vj.code, srv.Calls(), tc.code, vj.stderr)
			}
			if v.code != tc.code {
				t.Errorf("validate: exit %d, want %d\n%s%s", v.code, tc.code, v.stdout, v.stderr)
			}
			r := runBinary(t, dir, judgeEnv(srv), "run", "-c", "anvil.yaml", "-o", "out", "--limit", fmt.Sprint(cases), "--no-progress")
			if r.code != tc.code {
				t.Errorf("run: exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if got := srv.Calls(); got != tc.calls {
				t.Errorf("run: %d judge calls, want %d", got, tc.calls)
			}
			for _, w := range tc.want {
				if !strings.Contains(v.stderr, w) {
					t.Errorf("validate stderr lacks %q:\n%s", w, v.stderr)
				}
				if !strings.Contains(r.stderr, w) {
					t.Errorf("run stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if tc.code == exitOK && len(tc.want) == 0 && strings.Contains(strings.ToLower(v.stderr), "warn") {
				t.Errorf("validate warns on a correct config:\n%s", v.stderr)
			}
		})
	}
}

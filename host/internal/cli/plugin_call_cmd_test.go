package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/internal/testkit"
)

// runWithStdin runs the binary with stdin.
func runWithStdin(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = baseEnv(dir)
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(t, cmd)
}

// `plugin call` runs one export on the request from stdin and prints the
// output, over both transports, computing the digest when none is given.
func TestPluginCall(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	measure := `{"kind":"exact_match","metric":"m","config":{"ignore_case":true},"threshold":0.5,"case":{"id":"c1","actual_output":"PARIS","expected_output":"paris"}}`
	node := `{"kind":"regex_match","node_id":"n","config":{"pattern":"^Par"},"verdicts":["false","true"],"case":{"id":"c1","actual_output":"Paris"}}`
	for _, name := range []string{"textcheck.wasm", "textcheck-native"} {
		path := filepath.Join(wasmDir, name)
		t.Run(name, func(t *testing.T) {
			r := runWithStdin(t, dir, measure, "plugin", "call", path, "measure")
			if r.code != 0 || r.stdout != `{"score":1,"success":true,"threshold":0.5,"reason":"actual_output equals expected_output"}`+"\n" {
				t.Errorf("measure: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "no --sha256 given: computed sha256:") {
				t.Errorf("stderr does not say the digest was computed: %q", r.stderr)
			}

			r = runWithStdin(t, dir, node, "plugin", "call", path, "anvil_node")
			var res struct{ Verdict, Reason string }
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Verdict != "true" {
				t.Errorf("node: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
			}

			r = runWithStdin(t, dir, "", "plugin", "call", path, "describe")
			var d struct {
				Name  string
				Kinds []struct{ Name string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != 0 || d.Name != "textcheck" || len(d.Kinds) != 5 {
				t.Errorf("describe: exit %d, %v\n%s", r.code, err, r.stdout)
			}

			// A guest's own error comes back in the result, exit 0.
			r = runWithStdin(t, dir, `{"kind":"exact_match","metric":"m","case":{"id":"c2","actual_output":"x"}}`, "plugin", "call", path, "measure")
			var er struct {
				Error struct{ Code, Field, Plugin string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &er); err != nil || r.code != 0 || er.Error.Code != "missing_field" ||
				er.Error.Field != "expected_output" || er.Error.Plugin != "textcheck@1.0.0" {
				t.Errorf("missing field: exit %d, %v\n%s", r.code, err, r.stdout)
			}
		})
	}

	mod := filepath.Join(wasmDir, "textcheck.wasm")
	// The wrong digest: exit 1 before anything runs.
	if r := runWithStdin(t, dir, measure, "plugin", "call", mod, "measure", "--sha256", strings.Repeat("0", 64)); r.code != 1 ||
		r.stdout != "" || !strings.Contains(r.stderr, "sha256 mismatch: want sha256:"+strings.Repeat("0", 64)) {
		t.Errorf("wrong digest: exit %d\n%s", r.code, r.stderr)
	}
	// Usage errors: exit 2.
	for _, c := range []struct{ stdin, export string }{{measure, "score"}, {"not json", "measure"}} {
		if r := runWithStdin(t, dir, c.stdin, "plugin", "call", mod, c.export); r.code != 2 {
			t.Errorf("%s < %q: exit %d, want 2\n%s", c.export, c.stdin, r.code, r.stderr)
		}
	}
}

var extraWasm struct {
	once sync.Once
	dir  string
	err  error
}

// buildExtraWasm builds the geval plugin and the hostile zoo guest, which
// only the plugin call tests need.
func buildExtraWasm(t *testing.T) string {
	t.Helper()
	extraWasm.once.Do(func() {
		extraWasm.dir = filepath.Join(filepath.Dir(wasmDir), "call-wasm")
		for name, src := range map[string]string{"geval": "../../../plugins/geval/wasm", "hostile": "../plugin/testdata/zoo/hostile"} {
			if _, err := testkit.BuildGuest(t.Context(), src, filepath.Join(extraWasm.dir, name+".wasm")); err != nil {
				extraWasm.err = err
				return
			}
		}
	})
	if extraWasm.err != nil {
		t.Fatal(extraWasm.err)
	}
	return extraWasm.dir
}

// --judge scripted grants the judge and answers it with the scripted
// judge; without it the judge is denied, in the result. A trap prints
// the host's error as JSON on stderr and exits 1.
func TestPluginCallJudgeAndTrap(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	wasm := buildExtraWasm(t)
	dir := t.TempDir()
	req := `{"kind":"geval","metric":"m","config":{"criteria":"Is it right?","evaluation_params":["actual_output"]},"threshold":0.5,"case":{"id":"c","actual_output":"Paris"}}`
	geval := filepath.Join(wasm, "geval.wasm")

	r := runWithStdin(t, dir, req, "plugin", "call", geval, "measure", "--judge", "scripted")
	var res struct {
		Score   *float64
		Success bool
		Details struct {
			Steps     []string
			RawScore  int    `json:"raw_score"`
			ScoreMode string `json:"score_mode"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Score == nil || *res.Score != 0.5 ||
		!res.Success || len(res.Details.Steps) != 1 || res.Details.Steps[0] != "conformance" || res.Details.RawScore != 5 {
		t.Errorf("scripted judge: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}

	r = runWithStdin(t, dir, req, "plugin", "call", geval, "measure")
	var denied struct{ Error struct{ Code string } }
	if err := json.Unmarshal([]byte(r.stdout), &denied); err != nil || r.code != 0 || denied.Error.Code != "capability_denied" {
		t.Errorf("no judge: exit %d, %v\n%s", r.code, err, r.stdout)
	}

	r = runWithStdin(t, dir, `{"kind":"hostile","metric":"m","config":{"behaviour":"panic"},"case":{"id":"c"}}`,
		"plugin", "call", filepath.Join(wasm, "hostile.wasm"), "measure")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var trap struct{ Code, Message, Plugin, Stderr string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &trap); err != nil || r.code != 1 || r.stdout != "" ||
		trap.Code != "trap" || trap.Plugin != "hostile@0.0.1" || !strings.Contains(trap.Message, "anvil_measure trapped") || !strings.Contains(trap.Stderr, "hostile: deliberate panic in measure") {
		t.Errorf("trap: exit %d, %v\nstdout %q\nstderr %s", r.code, err, r.stdout, r.stderr)
	}
}

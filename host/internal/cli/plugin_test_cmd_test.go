package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/internal/testkit"
)

// `plugin test` on the textcheck example, over both transports: every
// check passes, one line per check, a summary, exit 0; --json carries the
// same report.
func TestPluginTestCommandPasses(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	configs, err := filepath.Abs("../conformance/testdata/textcheck.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"textcheck.wasm", "textcheck-native"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := runBinary(t, dir, nil, "plugin", "test", filepath.Join(wasmDir, name), "--config-file", configs)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if !strings.HasPrefix(lines[0], "plugin "+filepath.Join(wasmDir, name)+"  textcheck@1.0.0  sha256:") {
				t.Errorf("first line %q", lines[0])
			}
			summary := lines[len(lines)-1]
			m := regexp.MustCompile(`^(\d+) passed, 0 failed, 0 skipped$`).FindStringSubmatch(summary)
			if m == nil {
				t.Fatalf("summary %q\n%s", summary, r.stdout)
			}
			checks := lines[1 : len(lines)-1]
			if got := m[1]; got != itoa(len(checks)) {
				t.Errorf("summary says %s passed, %d check lines", got, len(checks))
			}
			for _, want := range []string{
				"PASS  metric/exact_match/missing-fields ",
				"PASS  node/regex_match/all-fields ",
				"PASS  node/contains_all/concurrency ",
				"PASS  metric/json_valid/judge/not-asked ",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("no line %q in\n%s", want, r.stdout)
				}
			}

			j := runBinary(t, dir, nil, "plugin", "test", filepath.Join(wasmDir, name), "--config-file", configs, "--json")
			var rep struct {
				Plugin, Transport       string
				Passed, Failed, Skipped int
				Results                 []struct{ Name, Status, Message string }
			}
			if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || j.code != 0 {
				t.Fatalf("--json: exit %d, %v\n%s", j.code, err, j.stdout)
			}
			wantTransport := map[string]string{"textcheck.wasm": "wasm", "textcheck-native": "process"}[name]
			if rep.Plugin != "textcheck@1.0.0" || rep.Transport != wantTransport || rep.Failed != 0 || rep.Passed != len(checks) || len(rep.Results) != len(checks) {
				t.Errorf("--json report: %+v", rep)
			}
		})
	}
}

// A failing check exits 1 naming it; kinds without a required config are
// skipped (exit 0); a malformed flag is a usage error (exit 2).
func TestPluginTestCommandFailsAndSkips(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	mod := filepath.Join(wasmDir, "textcheck.wasm")

	r := runBinary(t, dir, nil, "plugin", "test", mod, "--sha256", strings.Repeat("ab", 32))
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL  digest  file is sha256:") ||
		!strings.HasSuffix(r.stdout, "\n0 passed, 1 failed, 0 skipped\n") ||
		r.stderr != "anvil-host: plugin test: 1 check(s) failed: digest\n" {
		t.Errorf("digest mismatch: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runBinary(t, dir, nil, "plugin", "test", mod)
	// exact_match's after-timeout is skipped too when every call it tries
	// to cut short finishes within its 1 ms deadline.
	skipped := " passed, 0 failed, 2 skipped\n"
	if strings.Contains(r.stdout, "SKIP  metric/exact_match/after-timeout") {
		skipped = " passed, 0 failed, 3 skipped\n"
	}
	if r.code != 0 || !strings.Contains(r.stdout, "SKIP  node/regex_match/*") || !strings.Contains(r.stdout, "pass --config regex_match='{...}'") ||
		!strings.HasSuffix(r.stdout, skipped) {
		t.Errorf("no configs: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// A config that makes the kind fail its full case: exit 1, the check named.
	r = runBinary(t, dir, nil, "plugin", "test", mod, "--config", `regex_match={"pattern":"(unclosed"}`, "--config", `contains_all={"substrings":["Paris"]}`)
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL  node/regex_match/all-fields") || !strings.Contains(r.stderr, "node/regex_match/all-fields") {
		t.Errorf("bad config: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	for _, args := range [][]string{
		{"plugin", "test", mod, "--config", "regex_match"},
		{"plugin", "test", mod, "--config", "regex_match={nope"},
		{"plugin", "test", mod, "--transport", "carrier-pigeon"},
		{"plugin", "test", filepath.Join(dir, "absent.wasm")},
	} {
		if r := runBinary(t, dir, nil, args...); r.code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
}

// Without config flags, the kinds' configs come from the metrics of the
// anvil.yaml the usual discovery finds (here ./anvil.yaml), or --from.
func TestPluginTestCommandConfigsFromAnvilYAML(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	yamlText := `version: 1
dataset: cases.jsonl
metrics:
  - {name: year, kind: regex_match, params: {pattern: "\\d{4}"}}
  - {name: other, kind: regex_match, params: {pattern: "(unclosed"}}
  - {name: colours, kind: contains_all, params: {substrings: [Paris]}}
`
	if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(yamlText), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(wasmDir, "textcheck.wasm")
	r := runBinary(t, dir, nil, "plugin", "test", mod)
	lines := strings.Split(r.stdout, "\n")
	if r.code != 0 || len(lines) < 2 || lines[1] != "configs from anvil.yaml" || !strings.HasSuffix(r.stdout, " passed, 0 failed, 0 skipped\n") ||
		!strings.Contains(r.stdout, "PASS  node/regex_match/all-fields ") {
		t.Errorf("./anvil.yaml: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	other := t.TempDir()
	r = runBinary(t, other, nil, "plugin", "test", mod, "--from", filepath.Join(dir, "anvil.yaml"))
	if r.code != 0 || !strings.HasSuffix(r.stdout, " passed, 0 failed, 0 skipped\n") {
		t.Errorf("--from: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, other, nil, "plugin", "test", mod, "--from", filepath.Join(other, "absent.yaml")); r.code != 2 {
		t.Errorf("--from absent: exit %d\n%s", r.code, r.stderr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Package kwcov holds the same example metric, keyword_coverage, written
// in Go, C, AssemblyScript and Python (the last as a process plugin). This
// test builds all four from source, runs each through anvil-host's engine
// on the same dataset and judge, and requires identical results.
package kwcov

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

func TestMain(m *testing.M) {
	host.MaybeRunTrampoline() // the Python plugin is a process plugin
	os.Exit(m.Run())
}

type lang struct {
	name, artifact, transport string
	build                     []string // command, run in the repository root
	needs                     string   // a tool the build needs
}

func langs(root string) []lang {
	wasm := filepath.Join(root, "bin", "wasm")
	return []lang{
		{"go", filepath.Join(wasm, "kwcov-go.wasm"), "wasm", []string{"scripts/build-plugins"}, "go"},
		{"c", filepath.Join(wasm, "kwcov-c.wasm"), "wasm", []string{"examples/kwcov/c/build.sh"}, "clang"},
		{"as", filepath.Join(wasm, "kwcov-as.wasm"), "wasm", []string{"examples/kwcov/as/build.sh"}, "npm"},
		{"py", filepath.Join(root, "bin", "process", "kwcov-py.pyz"), "process", []string{"examples/kwcov/py/build.sh"}, "python3"},
	}
}

const metrics = `metrics:
  - name: kw
    kind: keyword_coverage
    threshold: 0.5
    params: {keywords: [Paris, capital, France]}
  - name: kw_exact
    kind: keyword_coverage
    threshold: 0.5
    params: {keywords: [paris, Paris, "café"], case_sensitive: true}
  - name: kw_judge
    kind: keyword_coverage
    threshold: 0.5
    params: {keywords: ["café", Paris], judge_check: true}
`

func TestSameResultsInEveryLanguage(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	judge := judgetest.New(t)
	judge.On(judgetest.ContainsMessage("No idea"), judgetest.Reply{Content: `{"verdict": false}`})
	judge.SetDefault(judgetest.Reply{Content: `{"verdict": true}`})

	results := map[string]map[string]any{}
	for _, l := range langs(root) {
		if _, err := exec.LookPath(l.needs); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s: %s is not installed (the scripts/ci-deps-* scripts install it)", l.name, l.needs)
			}
			t.Logf("%s: skipped, %s is not installed", l.name, l.needs)
			continue
		}
		cmd := exec.Command(l.build[0], l.build[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: build: %v\n%s", l.name, err, out)
		}
		dir := t.TempDir()
		cfg := fmt.Sprintf(`version: 1
dataset: %s
judges:
  default: {base_url: %q, model: m, api_key_env: KWCOV_KEY, supports_json_schema: true}
plugins:
  kwcov:
    path: %s
    sha256_file: %s.sha256
    transport: %s
    grants: {judge: true}
`, filepath.Join(root, "examples/kwcov/cases.jsonl"), judge.URL(), l.artifact, l.artifact, l.transport) + metrics
		path := filepath.Join(dir, "anvil.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := host.LoadConfig(path)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		res, err := host.Run(context.Background(), c, host.Options{Cache: "off",
			Getenv: func(k string) string { return map[string]string{"KWCOV_KEY": "k"}[k] }})
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		out := map[string]any{}
		for _, cr := range res.Cases {
			for _, m := range cr.Metrics {
				var details any
				if len(m.Details) > 0 {
					if err := json.Unmarshal(m.Details, &details); err != nil {
						t.Fatalf("%s: %s/%s details: %v", l.name, cr.CaseID, m.Metric, err)
					}
				}
				code := ""
				if m.Error != nil {
					code = string(m.Error.Code)
				}
				out[cr.CaseID+"/"+m.Metric] = []any{m.Status, m.Score, m.Reason, details, code, m.Usage.Requests}
			}
		}
		results[l.name] = out
	}
	ref, ok := results["go"]
	if !ok {
		t.Fatal("the Go example did not run")
	}
	// The reference itself, spot-checked against the spec.
	want := map[string][]any{
		"some/kw":          {"failed", 1.0 / 3, "found 1 of 3 keywords; missing: Paris, France"},
		"unicode/kw_exact": {"passed", 2.0 / 3, "found 2 of 3 keywords; missing: paris"},
		"unicode/kw_judge": {"passed", 1.0, "found 2 of 2 keywords"},
		"none/kw_judge":    {"failed", 0.0, "found 0 of 2 keywords; missing: café, Paris; judge: not meaningful"},
		"all/kw_judge":     {"passed", 0.5, "found 1 of 2 keywords; missing: café"},
	}
	for key, w := range want {
		got := ref[key].([]any)
		score := got[1].(*float64)
		if got[0] != w[0] || score == nil || fmt.Sprintf("%.6f", *score) != fmt.Sprintf("%.6f", w[1]) || got[2] != w[2] {
			t.Errorf("go %s = %v %v %q, want %v", key, got[0], *score, got[2], w)
		}
	}
	if got := ref["no-output/kw"].([]any); got[0] != "skipped" || got[4] != "missing_field" {
		t.Errorf("go no-output/kw = %v, want skipped missing_field", got)
	}
	for name, r := range results {
		if name == "go" {
			continue
		}
		if !reflect.DeepEqual(normal(r), normal(ref)) {
			for k := range ref {
				if !reflect.DeepEqual(normal(map[string]any{k: r[k]}), normal(map[string]any{k: ref[k]})) {
					t.Errorf("%s differs from go on %s:\n  %s: %s\n  go: %s", name, k, name, show(r[k]), show(ref[k]))
				}
			}
		}
	}
	t.Logf("compared %d results across %v", len(ref), keys(results))
}

// normal makes results comparable: pointers to scores become values.
func normal(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func show(v any) string { b, _ := json.Marshal(v); return string(b) }

func keys(m map[string]map[string]any) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, ",")
}

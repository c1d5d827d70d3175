// Tests of the Python kwcov example (examples/kwcov spec) through the real
// host: the zipapp is built from source by build.sh, started as a
// sandboxed process plugin, and judged by the fake judge server.
// They skip when no Python with grpcio and protobuf is installed
// (scripts/ci-deps-py installs them).
package kwcovpy_test

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

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

func TestMain(m *testing.M) { sdktest.Main(m, &built) }

// python is the interpreter the plugin's shebang names: absolute, and
// readable by nobody (under a root host the plugin runs as nobody).
func python() string {
	if p := os.Getenv("ANVIL_TEST_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

var built sdktest.Once

// plugin builds the example once and returns the zipapp's path.
func plugin(t *testing.T) string {
	t.Helper()
	py := python()
	if out, err := exec.Command(py, "-I", "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Skipf("no usable Python (%s with grpcio and protobuf; scripts/ci-deps-py installs them): %v: %s", py, err, out)
	}
	return filepath.Join(built.Dir(t, func(dir string) error {
		return sdktest.Command("", []string{"PYTHON=" + py}, "./build.sh", filepath.Join(dir, "kwcov-py.pyz"))
	}), "kwcov-py.pyz")
}

type run struct {
	params string // the metric's params (the kind's config), YAML flow
	grant  bool   // grants.judge
	judge  *judgetest.Server
}

// evaluate runs the one metric on cases and returns each case's result.
func evaluate(t *testing.T, r run, cases ...abi.TestCase) map[string]host.MetricResult {
	t.Helper()
	out, err := tryEvaluate(t, r, cases...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryEvaluate(t *testing.T, r run, cases ...abi.TestCase) (map[string]host.MetricResult, error) {
	t.Helper()
	return sdktest.TryEvaluate(t, sdktest.Plugin{Name: "kwcov", Path: plugin(t), Transport: "process", Limits: "{timeout: 20s}"},
		sdktest.Metric{Name: "kw", Kind: "keyword_coverage", Params: r.params, Judge: r.judge, Grant: r.grant, JSONSchema: true}, cases...)
}

type want struct {
	status  string
	score   float64
	reason  string
	details string // JSON
}

func check(t *testing.T, got map[string]host.MetricResult, wants map[string]want) {
	t.Helper()
	for id, w := range wants {
		m, ok := got[id]
		if !ok {
			t.Errorf("case %s: no result", id)
			continue
		}
		if m.Error != nil {
			t.Errorf("case %s: error %v", id, m.Error)
			continue
		}
		if m.Status != w.status || m.Score == nil || *m.Score != w.score || m.Reason != w.reason {
			t.Errorf("case %s: got status %s score %v reason %q, want %s %v %q", id, m.Status, deref(m.Score), m.Reason, w.status, w.score, w.reason)
		}
		if m.ScoreMode != "" {
			t.Errorf("case %s: score_mode %q, want empty", id, m.ScoreMode)
		}
		var gd, wd any
		if err := json.Unmarshal(m.Details, &gd); err != nil {
			t.Errorf("case %s: details %s: %v", id, m.Details, err)
		}
		_ = json.Unmarshal([]byte(w.details), &wd)
		if !reflect.DeepEqual(gd, wd) {
			t.Errorf("case %s: details %s, want %s", id, m.Details, w.details)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestCoverage(t *testing.T) {
	got := evaluate(t, run{params: `{keywords: [Paris, capital, France, Lyon]}`},
		abi.TestCase{ID: "most", ActualOutput: "Paris is the capital of France and its largest city."},
		abi.TestCase{ID: "upper", ActualOutput: "PARIS, CAPITAL OF FRANCE"},
		abi.TestCase{ID: "all", ActualOutput: "Paris, not Lyon, is the capital of France."},
		abi.TestCase{ID: "none", ActualOutput: "No idea."},
		abi.TestCase{ID: "half", ActualOutput: "Lyon? paris."},
	)
	check(t, got, map[string]want{
		"most":  {"passed", 0.75, "found 3 of 4 keywords; missing: Lyon", `{"found":["Paris","capital","France"],"missing":["Lyon"]}`},
		"upper": {"passed", 0.75, "found 3 of 4 keywords; missing: Lyon", `{"found":["Paris","capital","France"],"missing":["Lyon"]}`},
		"all":   {"passed", 1, "found 4 of 4 keywords", `{"found":["Paris","capital","France","Lyon"],"missing":[]}`},
		"none":  {"failed", 0, "found 0 of 4 keywords; missing: Paris, capital, France, Lyon", `{"found":[],"missing":["Paris","capital","France","Lyon"]}`},
		"half":  {"passed", 0.5, "found 2 of 4 keywords; missing: capital, France", `{"found":["Paris","Lyon"],"missing":["capital","France"]}`},
	})
}

func TestCaseSensitiveAndDuplicates(t *testing.T) {
	got := evaluate(t, run{params: `{keywords: [paris, Paris, Paris, Rome], case_sensitive: true}`},
		abi.TestCase{ID: "c", ActualOutput: "Paris, France"})
	check(t, got, map[string]want{
		"c": {"passed", 0.5, "found 2 of 4 keywords; missing: paris, Rome", `{"found":["Paris","Paris"],"missing":["paris","Rome"]}`},
	})
}

// Lowering is ASCII-only: "CRÈME" matches "CRÈME" and "crÈme", never "crème".
func TestUnicode(t *testing.T) {
	got := evaluate(t, run{params: `{keywords: ["café", "CRÈME", "crème", "procope", "☕"]}`},
		abi.TestCase{ID: "u", ActualOutput: "À Paris, le café « Le Procope » — fondé en 1686 — sert encore des cafés ☕ ; CAFÉ CRÈME à la carte."})
	check(t, got, map[string]want{
		"u": {"passed", 0.8, "found 4 of 5 keywords; missing: crème", `{"found":["café","CRÈME","procope","☕"],"missing":["crème"]}`},
	})
}

func verdictJudge(t *testing.T, verdict string) *judgetest.Server {
	j := judgetest.New(t)
	j.SetDefault(judgetest.Reply{Content: `{"verdict": ` + verdict + `}`})
	return j
}

func TestJudgeCheck(t *testing.T) {
	const out = "Paris is the capital of France."
	for _, tc := range []struct {
		verdict string
		want    want
	}{
		{"true", want{"passed", 0.75, "found 3 of 4 keywords; missing: Lyon", `{"found":["Paris","capital","France"],"missing":["Lyon"],"judge":true}`}},
		{"false", want{"failed", 0.375, "found 3 of 4 keywords; missing: Lyon; judge: not meaningful", `{"found":["Paris","capital","France"],"missing":["Lyon"],"judge":false}`}},
	} {
		t.Run(tc.verdict, func(t *testing.T) {
			j := verdictJudge(t, tc.verdict)
			got := evaluate(t, run{params: `{keywords: [Paris, capital, France, Lyon], judge_check: true}`, grant: true, judge: j},
				abi.TestCase{ID: "j", ActualOutput: out})
			check(t, got, map[string]want{"j": tc.want})
			reqs := j.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d judge requests, want 1", len(reqs))
			}
			r := reqs[0]
			wantMsg := "Does the following answer use these keywords in a meaningful way? Keywords: Paris, capital, France, Lyon\n\nAnswer:\n" +
				out + "\n\nReturn only a JSON object {\"verdict\": true|false}."
			if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content != wantMsg {
				t.Errorf("judge messages %+v, want one user message %q", r.Messages, wantMsg)
			}
			if r.Temperature == nil || *r.Temperature != 0 {
				t.Errorf("temperature %v, want 0", r.Temperature)
			}
			if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil || r.ResponseFormat.JSONSchema.Name != "keyword_check" {
				t.Fatalf("response format %+v, want json_schema keyword_check", r.ResponseFormat)
			}
			var schema, wantSchema any
			_ = json.Unmarshal(r.ResponseFormat.JSONSchema.Schema, &schema)
			_ = json.Unmarshal([]byte(`{"type":"object","properties":{"verdict":{"type":"boolean"}},"required":["verdict"],"additionalProperties":false}`), &wantSchema)
			if !reflect.DeepEqual(schema, wantSchema) {
				t.Errorf("schema %s", r.ResponseFormat.JSONSchema.Schema)
			}
		})
	}
}

func TestJudgeErrors(t *testing.T) {
	t.Run("capability_denied", func(t *testing.T) {
		j := verdictJudge(t, "true")
		got := evaluate(t, run{params: `{keywords: [Paris], judge_check: true}`, grant: false, judge: j},
			abi.TestCase{ID: "d", ActualOutput: "Paris"})
		wantError(t, got["d"], abi.CodeCapability, "")
		if j.Calls() != 0 {
			t.Errorf("%d judge calls, want 0", j.Calls())
		}
	})
	t.Run("judge_error", func(t *testing.T) {
		j := judgetest.New(t)
		j.SetDefault(judgetest.Reply{Status: 400, ErrorMessage: "bad request, on purpose"})
		got := evaluate(t, run{params: `{keywords: [Paris], judge_check: true}`, grant: true, judge: j},
			abi.TestCase{ID: "e", ActualOutput: "Paris"})
		wantError(t, got["e"], abi.CodeJudge, "")
	})
}

func wantError(t *testing.T, m host.MetricResult, code abi.Code, field string) {
	t.Helper()
	if m.Status != "error" || m.Error == nil || m.Error.Code != code || m.Error.Field != field || m.Score != nil {
		t.Errorf("got status %s error %+v score %v, want error %s (field %q)", m.Status, m.Error, deref(m.Score), code, field)
	}
}

// The kind's config_schema reaches the host through Describe, and the host
// refuses a config that breaks it before any case runs, naming the field
// (the SDK's own check of the same rules, for hosts that do not, is
// tested in sdk/python/tests).
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`{keywords: [a], bogus: 1}`, "'bogus' not allowed"},
		{`{keywords: []}`, "params.keywords: minItems"},
		{`{case_sensitive: true}`, "missing property 'keywords'"},
		{`{keywords: [a, ""]}`, "params.keywords.1: minLength"},
		{`{keywords: a}`, "params.keywords: got string, want array"},
		{`{keywords: [a], case_sensitive: "yes"}`, "params.case_sensitive: got string, want boolean"},
	} {
		t.Run(tc.params, func(t *testing.T) {
			_, err := tryEvaluate(t, run{params: tc.params}, abi.TestCase{ID: "x", ActualOutput: "a"})
			if err == nil || !strings.Contains(err.Error(), "metric kw: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one naming metric kw and %q", err, tc.want)
			}
		})
	}
}

// A case without actual_output is the host's to skip (required_fields);
// the others in the same run are scored.
func TestMissingField(t *testing.T) {
	got := evaluate(t, run{params: `{keywords: [a]}`},
		abi.TestCase{ID: "empty", Input: "q"}, abi.TestCase{ID: "ok", ActualOutput: "a"})
	if m := got["empty"]; m.Status != "skipped" || m.Score != nil {
		t.Errorf("empty: status %s score %v, want skipped", m.Status, deref(m.Score))
	}
	if m := got["ok"]; m.Status != "passed" || m.Score == nil || *m.Score != 1 {
		t.Errorf("ok: status %s score %v, want passed 1", m.Status, deref(m.Score))
	}
}

// BenchmarkStartAndMeasure is one whole evaluation of one case: load the
// config, start the sandboxed interpreter (go-plugin handshake, describe,
// broker dial), one measure, stop the process. Most of it is the start.
func BenchmarkStartAndMeasure(b *testing.B) {
	py := python()
	if err := exec.Command(py, "-I", "-c", "import grpc, google.protobuf").Run(); err != nil {
		b.Skipf("no usable Python (%s with grpcio and protobuf)", py)
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "kwcov-py.pyz")
	cmd := exec.Command("./build.sh", bin)
	cmd.Env = append(os.Environ(), "PYTHON="+py)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build.sh: %v\n%s", err, out)
	}
	judge := judgetest.New(b)
	cfg := fmt.Sprintf("version: 1\njudges:\n  default: {base_url: %q, model: m, api_key_env: KWCOV_KEY}\nplugins:\n  kwcov:\n    transport: process\n    path: %s\n    sha256_file: %s.sha256\n"+
		"metrics:\n  - name: kw\n    kind: keyword_coverage\n    params: {keywords: [a]}\n", judge.URL(), bin, bin)
	if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	c, err := host.LoadConfig(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	cases := []abi.TestCase{{ID: "a", ActualOutput: "a"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := host.Evaluate(context.Background(), c, cases, host.Options{Cache: "off",
			Getenv: func(k string) string { return map[string]string{"KWCOV_KEY": "k"}[k] }})
		if err != nil || len(res.Cases) != 1 || res.Cases[0].Metrics[0].Score == nil || *res.Cases[0].Metrics[0].Score != 1 {
			b.Fatalf("evaluate: %v %+v", err, res)
		}
	}
}

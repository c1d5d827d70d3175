// Tests of the Go kwcov example (the shared example metric of
// examples/kwcov) through the real host: the module is built from source
// with the go command running the tests, loaded pinned by its digest, and
// judged by the fake judge server over HTTP.
package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
)

var built struct {
	once         sync.Once
	path, digest string
	err          error
}

// module builds examples/kwcov/go once per test binary.
func module(t *testing.T) (string, string) {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "kwcov-go-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "kwcov-go.wasm")
		built.digest, built.err = testkit.BuildGuest(context.Background(), ".", built.path)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path, built.digest
}

var cases = []abi.TestCase{
	{ID: "all", ActualOutput: "Paris is the capital of France."},
	{ID: "some", ActualOutput: "The capital is Lyon."},
	{ID: "upper", ActualOutput: "PARIS, CAPITAL OF FRANCE"},
	{ID: "unicode", ActualOutput: "À Paris, le CAFÉ crème ☕"},
	{ID: "none", ActualOutput: "No idea."},
	{ID: "no-output", Input: "What is the capital of France?"},
}

type outcome struct {
	status  string
	score   float64
	reason  string
	details string // compact JSON
	code    abi.Code
}

// evaluate runs the kwcov metric with params on cases, against judge.
func evaluate(t *testing.T, params, judgeURL string) map[string]outcome {
	t.Helper()
	path, digest := module(t)
	dir := t.TempDir()
	cfg := `version: 1
judges:
  default: {base_url: "` + judgeURL + `", model: m, api_key_env: KWCOV_KEY, supports_json_schema: true}
plugins:
  kwcov-go: {path: "` + path + `", sha256: "` + digest + `", grants: {judge: true}}
metrics:
  - name: kw
    kind: keyword_coverage
    threshold: 0.5
    params: ` + params + "\n"
	if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := host.LoadConfig(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := host.Evaluate(context.Background(), c, cases, host.Options{Cache: "off",
		Getenv: func(k string) string { return map[string]string{"KWCOV_KEY": "k"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]outcome{}
	for _, cr := range res.Cases {
		m := cr.Metrics[0]
		o := outcome{status: m.Status, reason: m.Reason, details: string(m.Details)}
		if m.Score != nil {
			o.score = *m.Score
		}
		if m.Error != nil {
			o.code = m.Error.Code
		}
		out[cr.CaseID] = o
	}
	return out
}

func TestKeywordCoverage(t *testing.T) {
	judge := judgetest.NewServer()
	url, err := judge.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer judge.Close()

	got := evaluate(t, `{keywords: [paris, capital, café, France]}`, url)
	want := map[string]outcome{
		"all":     {"passed", 0.75, "found 3 of 4 keywords; missing: café", `{"found":["paris","capital","France"],"missing":["café"]}`, ""},
		"some":    {"failed", 0.25, "found 1 of 4 keywords; missing: paris, café, France", `{"found":["capital"],"missing":["paris","café","France"]}`, ""},
		"upper":   {"passed", 0.75, "found 3 of 4 keywords; missing: café", `{"found":["paris","capital","France"],"missing":["café"]}`, ""},
		"unicode": {"failed", 0.25, "found 1 of 4 keywords; missing: capital, café, France", `{"found":["paris"],"missing":["capital","café","France"]}`, ""},
		"none":    {"failed", 0, "found 0 of 4 keywords; missing: paris, capital, café, France", `{"found":[],"missing":["paris","capital","café","France"]}`, ""},
	}
	for id, w := range want {
		g := got[id]
		if g.status != w.status || g.score != w.score || g.reason != w.reason || !sameJSON(t, g.details, w.details) {
			t.Errorf("%s: got %+v\nwant %+v", id, g, w)
		}
	}
	// ASCII-only lowering: "CAFÉ" does not match "café"; the host skips
	// a case without actual_output (a required field).
	if g := got["no-output"]; g.status != "skipped" {
		t.Errorf("no-output: %+v; want skipped", g)
	}
	if judge.Calls() != 0 {
		t.Errorf("%d judge calls without judge_check", judge.Calls())
	}

	t.Run("case sensitive", func(t *testing.T) {
		got := evaluate(t, `{keywords: [Paris, CAFÉ], case_sensitive: true}`, url)
		if g := got["unicode"]; g.score != 1 || g.reason != "found 2 of 2 keywords" {
			t.Errorf("unicode: %+v", g)
		}
		if g := got["upper"]; g.score != 0 {
			t.Errorf("upper: %+v", g)
		}
	})

	t.Run("judge_check", func(t *testing.T) {
		judge.Reset()
		judge.On(judgetest.ContainsMessage("Lyon"), judgetest.Reply{Content: `{"verdict": false}`})
		judge.SetDefault(judgetest.Reply{Content: `{"verdict": true}`})
		got := evaluate(t, `{keywords: [capital, paris], judge_check: true}`, url)
		if g := got["all"]; g.score != 1 || g.reason != "found 2 of 2 keywords" ||
			!sameJSON(t, g.details, `{"found":["capital","paris"],"missing":[],"judge":true}`) {
			t.Errorf("all: %+v", g)
		}
		if g := got["some"]; g.score != 0.25 || g.reason != "found 1 of 2 keywords; missing: paris; judge: not meaningful" ||
			!sameJSON(t, g.details, `{"found":["capital"],"missing":["paris"],"judge":false}`) {
			t.Errorf("some: %+v", g)
		}
		reqs := judge.Requests()
		if len(reqs) != 5 { // one per case with actual_output
			t.Fatalf("%d judge requests, want 5", len(reqs))
		}
		wantPrompt := "Does the following answer use these keywords in a meaningful way? Keywords: capital, paris\n\nAnswer:\nThe capital is Lyon.\n\nReturn only a JSON object {\"verdict\": true|false}."
		found := false
		for _, r := range reqs {
			for _, m := range r.Messages {
				if m.Content == wantPrompt && m.Role == "user" {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no request carried the specified prompt; first: %+v", reqs[0].Messages)
		}
	})

	t.Run("judge error propagates", func(t *testing.T) {
		judge.Reset()
		judge.SetDefault(judgetest.PlainText(400, "bad request"))
		got := evaluate(t, `{keywords: [capital], judge_check: true}`, url)
		if g := got["all"]; g.status != "error" || g.code != abi.CodeJudge {
			t.Errorf("all: %+v; want error judge_error", g)
		}
	})
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return strings.TrimSpace(a) == strings.TrimSpace(b)
	}
	return reflect.DeepEqual(x, y)
}

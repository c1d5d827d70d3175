// Tests of the Go kwcov example (the shared example metric of
// examples/kwcov) through the real host: the module is built from source
// with the go command running the tests, loaded pinned by its digest, and
// judged by the fake judge server over HTTP.
package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/internal/testkit"
	"github.com/agentanvil/anvil/internal/testkit/sdktest"
)

var (
	built  sdktest.Once
	digest string // the module's, pinned in the config
)

func TestMain(m *testing.M) { sdktest.Main(m, &built) }

// module builds examples/kwcov/go once per test binary and returns its
// path and digest.
func module(t *testing.T) (string, string) {
	t.Helper()
	path := filepath.Join(built.Dir(t, func(dir string) (err error) {
		path := filepath.Join(dir, "kwcov-go.wasm")
		if _, err := testkit.BuildGuest(context.Background(), ".", path); err != nil {
			return err
		}
		digest, err = sdktest.WriteDigest(path)
		return err
	}), "kwcov-go.wasm")
	return path, digest
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
func evaluate(t *testing.T, params string, judge *judgetest.Server) map[string]outcome {
	t.Helper()
	path, digest := module(t)
	res := sdktest.Evaluate(t, sdktest.Plugin{Name: "kwcov-go", Path: path, SHA256: digest},
		sdktest.Metric{Name: "kw", Kind: "keyword_coverage", Params: params, Judge: judge, Grant: true, JSONSchema: true}, cases...)
	out := map[string]outcome{}
	for id, m := range res {
		o := outcome{status: m.Status, reason: m.Reason, details: string(m.Details)}
		if m.Score != nil {
			o.score = *m.Score
		}
		if m.Error != nil {
			o.code = m.Error.Code
		}
		out[id] = o
	}
	return out
}

func TestKeywordCoverage(t *testing.T) {
	judge := judgetest.New(t)

	got := evaluate(t, `{keywords: [paris, capital, café, France]}`, judge)
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
		got := evaluate(t, `{keywords: [Paris, CAFÉ], case_sensitive: true}`, judge)
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
		got := evaluate(t, `{keywords: [capital, paris], judge_check: true}`, judge)
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
		got := evaluate(t, `{keywords: [capital], judge_check: true}`, judge)
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

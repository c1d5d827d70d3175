package kwcovas_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
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

// The module is built once per test binary, from source, with build.sh
// (npm ci + asc) into a temporary directory.
var built sdktest.Once

func TestMain(m *testing.M) { sdktest.Main(m, &built) }

func module(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("kwcov-as needs %s to build (scripts/ci-deps-as installs node and npm): %v", tool, err)
		}
	}
	return filepath.Join(built.Dir(t, func(dir string) error {
		return sdktest.Command("", []string{"OUT=" + dir}, "./build.sh")
	}), "kwcov-as.wasm")
}

// judge starts the fake judge: "meaningless" answers get verdict false,
// "GARBLED" answers a reply that is not JSON (a judge_error after the
// host's repair attempt), everything else verdict true.
func judge(t *testing.T) *judgetest.Server {
	s := judgetest.New(t)
	s.On(judgetest.ContainsMessage("GARBLED"), judgetest.Reply{Content: "I refuse to answer in JSON."})
	s.On(judgetest.ContainsMessage("meaningless"), judgetest.Reply{Content: `{"verdict": false}`})
	s.SetDefault(judgetest.Reply{Content: `{"verdict": true}`})
	return s
}

// evaluate runs one keyword_coverage metric (params as YAML flow) over
// cases against j and returns each case's result by id.
func evaluate(t *testing.T, j *judgetest.Server, grantJudge bool, params string, cases ...abi.TestCase) map[string]host.MetricResult {
	t.Helper()
	return sdktest.Evaluate(t, sdktest.Plugin{Name: "kwcov-as", Path: module(t)},
		sdktest.Metric{Name: "kw", Kind: "keyword_coverage", Params: params, Judge: j, Grant: grantJudge, JSONSchema: true}, cases...)
}

type details struct {
	Found   []string `json:"found"`
	Missing []string `json:"missing"`
	Judge   *bool    `json:"judge"`
}

func decodeDetails(t *testing.T, m host.MetricResult) (d details, raw map[string]any) {
	t.Helper()
	if err := json.Unmarshal(m.Details, &raw); err != nil {
		t.Fatalf("details %s: %v", m.Details, err)
	}
	if err := json.Unmarshal(m.Details, &d); err != nil {
		t.Fatal(err)
	}
	return d, raw
}

func wantScore(t *testing.T, id string, m host.MetricResult, score float64, reason string) {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("case %s: error %v, want score %v", id, m.Error, score)
	}
	if m.Score == nil || *m.Score != score {
		t.Errorf("case %s: score %v, want %v", id, m.Score, score)
	}
	if m.Reason != reason {
		t.Errorf("case %s: reason %q, want %q", id, m.Reason, reason)
	}
	if m.ScoreMode != "" {
		t.Errorf("case %s: score_mode %q, want none", id, m.ScoreMode)
	}
}

func TestKeywordCoverage(t *testing.T) {
	j := judge(t)
	res := evaluate(t, j, true, `{keywords: [Paris, capital, Eiffel, capital]}`,
		abi.TestCase{ID: "all", ActualOutput: "PARIS is the Capital of France; see the eiffel tower."},
		abi.TestCase{ID: "some", ActualOutput: "Paris, of course."},
		abi.TestCase{ID: "none", ActualOutput: "Lyon."},
	)
	wantScore(t, "all", res["all"], 1, "found 4 of 4 keywords")
	wantScore(t, "some", res["some"], 0.25, "found 1 of 4 keywords; missing: capital, Eiffel, capital")
	wantScore(t, "none", res["none"], 0, "found 0 of 4 keywords; missing: Paris, capital, Eiffel, capital")
	if res["all"].Status != "passed" || res["some"].Status != "failed" {
		t.Errorf("statuses %s, %s; want passed, failed", res["all"].Status, res["some"].Status)
	}
	d, raw := decodeDetails(t, res["some"])
	if !reflect.DeepEqual(d.Found, []string{"Paris"}) || !reflect.DeepEqual(d.Missing, []string{"capital", "Eiffel", "capital"}) {
		t.Errorf("details %s", res["some"].Details)
	}
	if _, ok := raw["judge"]; ok {
		t.Errorf("details %s: judge present though judge_check is off", res["some"].Details)
	}
	// Empty arrays, not null.
	if _, raw := decodeDetails(t, res["all"]); !reflect.DeepEqual(raw, map[string]any{
		"found": []any{"Paris", "capital", "Eiffel", "capital"}, "missing": []any{}}) {
		t.Errorf("details %s", res["all"].Details)
	}
	if j.Calls() != 0 {
		t.Errorf("%d judge calls without judge_check", j.Calls())
	}
}

func TestUnicodeAndCase(t *testing.T) {
	j := judge(t)
	text := "Le café de Größe XL à 東京 — naïve 🙂 emoji"
	// ASCII-only lowering: "CAFÉ" lowers to "cafÉ" and "NAÏVE" to "naÏve",
	// which are not in the text; "Größe" in the text lowers to "größe".
	res := evaluate(t, j, false, `{keywords: ["café", "CAFÉ", "größe", "東京", "🙂", "NAÏVE", "Emoji"]}`,
		abi.TestCase{ID: "u", ActualOutput: text})
	wantScore(t, "u", res["u"], 5.0/7.0, "found 5 of 7 keywords; missing: CAFÉ, NAÏVE")
	d, _ := decodeDetails(t, res["u"])
	if !reflect.DeepEqual(d.Found, []string{"café", "größe", "東京", "🙂", "Emoji"}) {
		t.Errorf("found %q", d.Found)
	}

	res = evaluate(t, j, false, `{keywords: ["Größe", "größe", "emoji", "Emoji"], case_sensitive: true}`,
		abi.TestCase{ID: "cs", ActualOutput: text})
	wantScore(t, "cs", res["cs"], 0.5, "found 2 of 4 keywords; missing: größe, Emoji")
}

func TestConfigErrors(t *testing.T) {
	j := judge(t)
	c := abi.TestCase{ID: "c", ActualOutput: "text"}
	for _, tc := range []struct{ params, field, inMessage string }{
		{`{keywords: [a], bogus: 1}`, "bogus", "bogus"},
		{`{keywords: []}`, "keywords", "keywords"},
		{`{case_sensitive: true}`, "keywords", "keywords"},
		{`{keywords: [a, ""]}`, "keywords", "keywords[1]"},
		{`{keywords: "a"}`, "keywords", "keywords"},
		{`{keywords: [a], judge_check: "yes"}`, "judge_check", "judge_check"},
	} {
		m := evaluate(t, j, false, tc.params, c)["c"]
		if m.Error == nil || m.Error.Code != abi.CodeInvalidConfig || m.Error.Field != tc.field ||
			!strings.Contains(m.Error.Message, tc.inMessage) || m.Score != nil {
			t.Errorf("params %s: got score %v error %+v; want invalid_config on %s", tc.params, m.Score, m.Error, tc.field)
		}
	}
}

func TestMissingField(t *testing.T) {
	j := judge(t)
	m := evaluate(t, j, false, `{keywords: [a]}`, abi.TestCase{ID: "empty", Input: "question"})["empty"]
	if m.Error == nil || m.Error.Code != abi.CodeMissingField || m.Error.Field != abi.FieldActualOutput {
		t.Fatalf("got %+v; want missing_field actual_output", m.Error)
	}
}

func TestJudgeCheck(t *testing.T) {
	j := judge(t)
	res := evaluate(t, j, true, `{keywords: [refund, "30 days"], judge_check: true}`,
		abi.TestCase{ID: "yes", ActualOutput: "You get a refund within 30 days — déjà vu."},
		abi.TestCase{ID: "no", ActualOutput: "refund refund meaningless"},
		abi.TestCase{ID: "garbled", ActualOutput: "refund GARBLED"},
	)
	wantScore(t, "yes", res["yes"], 1, "found 2 of 2 keywords")
	wantScore(t, "no", res["no"], 0.25, "found 1 of 2 keywords; missing: 30 days; judge: not meaningful")
	for id, want := range map[string]bool{"yes": true, "no": false} {
		d, _ := decodeDetails(t, res[id])
		if d.Judge == nil || *d.Judge != want {
			t.Errorf("case %s: details %s, want judge %v", id, res[id].Details, want)
		}
	}
	if g := res["garbled"]; g.Error == nil || g.Error.Code != abi.CodeJudge || g.Score != nil {
		t.Errorf("garbled: score %v error %+v; want judge_error", g.Score, g.Error)
	}

	// The request, byte for byte as the spec writes it.
	var seen bool
	for _, r := range j.Requests() {
		if !strings.Contains(r.LastMessage(), "déjà vu") {
			continue
		}
		seen = true
		want := "Does the following answer use these keywords in a meaningful way? Keywords: refund, 30 days\n\nAnswer:\n" +
			"You get a refund within 30 days — déjà vu.\n\nReturn only a JSON object {\"verdict\": true|false}."
		if len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Content != want {
			t.Errorf("messages %+v;\nwant one user message %q", r.Messages, want)
		}
		if r.Temperature == nil || *r.Temperature != 0 {
			t.Errorf("temperature %v, want 0", r.Temperature)
		}
		if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil || r.ResponseFormat.JSONSchema.Name != "keyword_check" {
			t.Fatalf("response_format %+v, want json_schema keyword_check", r.ResponseFormat)
		}
		var schema, wantSchema any
		json.Unmarshal(r.ResponseFormat.JSONSchema.Schema, &schema)
		json.Unmarshal([]byte(`{"type":"object","properties":{"verdict":{"type":"boolean"}},"required":["verdict"],"additionalProperties":false}`), &wantSchema)
		if !reflect.DeepEqual(schema, wantSchema) {
			t.Errorf("schema %s", r.ResponseFormat.JSONSchema.Schema)
		}
	}
	if !seen {
		t.Error("no judge request for case yes")
	}
}

func TestJudgeDenied(t *testing.T) {
	j := judge(t)
	m := evaluate(t, j, false, `{keywords: [a], judge_check: true}`, abi.TestCase{ID: "d", ActualOutput: "a"})["d"]
	if m.Error == nil || m.Error.Code != abi.CodeCapability || m.Score != nil {
		t.Fatalf("got score %v error %+v; want capability_denied", m.Score, m.Error)
	}
	if j.Calls() != 0 {
		t.Errorf("%d judge calls though the judge is not granted", j.Calls())
	}
}

// reference is the spec's keyword_coverage, in Go.
func reference(keywords []string, caseSensitive bool, text string) (score float64, reason string, found, missing []string) {
	lower := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if c >= 'A' && c <= 'Z' {
				b[i] = c + 32
			}
		}
		return string(b)
	}
	hay := text
	if !caseSensitive {
		hay = lower(text)
	}
	found, missing = []string{}, []string{}
	for _, k := range keywords {
		n := k
		if !caseSensitive {
			n = lower(k)
		}
		if strings.Contains(hay, n) {
			found = append(found, k)
		} else {
			missing = append(missing, k)
		}
	}
	score = float64(len(found)) / float64(len(keywords))
	reason = fmt.Sprintf("found %d of %d keywords", len(found), len(keywords))
	if len(missing) > 0 {
		reason += "; missing: " + strings.Join(missing, ", ")
	}
	return score, reason, found, missing
}

// TestAgainstReference compares the module with the Go reference on
// generated texts mixing ASCII, accents, CJK, emoji and JSON-special
// characters.
func TestAgainstReference(t *testing.T) {
	j := judge(t)
	words := []string{"Alpha", "alpha", "BETA", "gamma", "É", "é", "ñandú", "東京", "🙂", "\"q\"", "back\\slash", "tab\there", "new\nline", "Zz", "zZ", "x"}
	keywords := []string{"alpha", "Beta", "é", "ÑANDÚ", "東京", "🙂", "\"q\"", "back\\slash", "new\nline", "zz"}
	rng := rand.New(rand.NewSource(1))
	var cases []abi.TestCase
	for i := 0; i < 60; i++ {
		var parts []string
		for n := 1 + rng.Intn(6); n > 0; n-- {
			parts = append(parts, words[rng.Intn(len(words))])
		}
		cases = append(cases, abi.TestCase{ID: fmt.Sprintf("g%02d", i), ActualOutput: strings.Join(parts, " ")})
	}
	kwJSON, _ := json.Marshal(keywords)
	for _, cs := range []bool{false, true} {
		res := evaluate(t, j, false, fmt.Sprintf(`{keywords: %s, case_sensitive: %t}`, kwJSON, cs), cases...)
		for _, c := range cases {
			score, reason, found, missing := reference(keywords, cs, c.ActualOutput)
			m := res[c.ID]
			wantScore(t, c.ID, m, score, reason)
			d, _ := decodeDetails(t, m)
			if !reflect.DeepEqual(d.Found, found) || !reflect.DeepEqual(d.Missing, missing) {
				t.Errorf("case %s (case_sensitive %t): details %s; want found %q missing %q", c.ID, cs, m.Details, found, missing)
			}
		}
	}
}

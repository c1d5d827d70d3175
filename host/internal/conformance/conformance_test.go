package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/internal/testkit"
)

// configsFrom reads a testdata config file (kind → config).
func configsFrom(t *testing.T, name string) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for k, v := range m {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = raw
	}
	return out
}

func run(t *testing.T, opts Options) *Report {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = cacheDir()
	}
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// result finds a check by name.
func result(t *testing.T, rep *Report, name string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name {
			return r
		}
	}
	var b bytes.Buffer
	WriteText(&b, rep)
	t.Fatalf("no check %q in the report:\n%s", name, b.String())
	return Result{}
}

func dump(rep *Report) string {
	var b bytes.Buffer
	WriteText(&b, rep)
	return b.String()
}

// Every first-party plugin and the textcheck example, over both
// transports where it has both, passes every check it can run, and the
// checks that prove the judge discipline actually ran.
func TestFirstPartyPass(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	cases := []struct {
		name, path, configs string
		verdicts            map[string][]string
		transport           string
		// want are checks that must PASS with a message containing the text.
		want    map[string]string
		skipped int
	}{
		{name: "textcheck wasm", path: wasmPath("textcheck"), configs: "textcheck.yaml", transport: plugin.TransportWasm,
			want: map[string]string{
				"descriptor/kinds":                  "5 kinds: metric/exact_match, metric/json_valid, node/json_valid, node/regex_match, node/contains_all",
				"metric/exact_match/missing-fields": "missing_field for each of actual_output, expected_output",
				"metric/exact_match/concurrency":    "16 concurrent calls across the pool equal the 8 sequential ones",
				"node/regex_match/all-fields":       "verdict true",
				"node/contains_all/unicode":         "verdict false",
				"metric/json_valid/judge/not-asked": "no judge call",
				"golden/measure_result.error":       "valid against abi/v1/schema/measure_result.json",
				"metric/exact_match/after-timeout":  "the next 5 calls succeeded with the same result",
				"metric/exact_match/unknown-fields": "same result as without them",
			}},
		{name: "textcheck process", path: filepath.Join(buildDir, "textcheck-native"), configs: "textcheck.yaml", transport: plugin.TransportProcess,
			want: map[string]string{
				"load":                              "textcheck@1.0.0 loaded over process",
				"node/regex_match/all-fields":       "verdict true",
				"metric/exact_match/determinism":    "same input twice gave the same output (2 cases)",
				"metric/exact_match/missing-fields": "missing_field for each of actual_output, expected_output",
			}},
		{name: "geval", path: wasmPath("geval"), configs: "geval.yaml", transport: plugin.TransportWasm, skipped: 2,
			want: map[string]string{
				"metric/geval/prepare":                      "valid against prepare_result.json",
				"metric/geval/all-fields":                   "score 0.5",
				"metric/geval/judge/granted":                "1 batches, 1 judge requests, well formed; result score 0.5",
				"metric/geval/judge/denied":                 "error capability_denied, no crash",
				"metric/geval/judge/token-budget":           "error budget_exhausted, no crash",
				"metric/geval/after-timeout":                "4 calls cut short",
				"metric/conversational_geval/all-fields":    "score 0.5",
				"metric/conversational_geval/judge/granted": "1 batches, 1 judge requests, well formed",
			}},
		{name: "dag", path: wasmPath("dag"), configs: "dag.yaml", verdicts: map[string][]string{"choice": {"paris", "other"}},
			transport: plugin.TransportWasm, skipped: 3,
			want: map[string]string{
				"node/binary/all-fields":    "verdict true",
				"node/choice/all-fields":    "verdict paris",
				"node/task/all-fields":      "output of 11 bytes",
				"node/task/judge/denied":    "error capability_denied, no crash",
				"node/choice/concurrency":   "16 concurrent calls",
				"node/binary/determinism":   "same input twice",
				"node/binary/judge/granted": "1 batches, 1 judge requests",
			}},
		{name: "conversation", path: wasmPath("conversation"), configs: "conversation.yaml", transport: plugin.TransportWasm, skipped: 1,
			want: map[string]string{
				"metric/role_adherence/missing-fields":    "missing_field for each of turns, chatbot_role",
				"metric/turn_relevancy/judge/granted":     "well formed",
				"metric/knowledge_retention/judge/denied": "error capability_denied, no crash",
			}},
		{name: "rag", path: wasmPath("rag"), configs: "rag.yaml", transport: plugin.TransportWasm, skipped: 4, // one call per case: a call budget of 1 is not reached
			want: map[string]string{
				"metric/faithfulness/missing-fields":        "missing_field for each of actual_output, retrieval_context",
				"metric/answer_relevancy/judge/granted":     "2 batches, 2 judge requests, well formed; result score 1",
				"metric/answer_relevancy/judge/call-budget": "max_judge_calls 1 (the kind makes 2): error budget_exhausted",
				"metric/faithfulness/judge/call-budget":     "error budget_exhausted, no crash",
				"metric/contextual_precision/judge/granted": "1 batches, 1 judge requests, well formed; result score 1",
				"metric/contextual_recall/judge/granted":    "1 batches, 1 judge requests, well formed; result score 1",
				"metric/contextual_relevancy/judge/granted": "1 batches, 1 judge requests, well formed; result score 1",
				"metric/hallucination/judge/granted":        "1 batches, 1 judge requests, well formed; result score 1",
			}},
		{name: "assert", path: wasmPath("assert"), configs: "assert.yaml", transport: plugin.TransportWasm,
			want: map[string]string{
				"metric/regex/prepare":                   "valid against prepare_result.json",
				"metric/regex/all-fields":                "score 1",
				"metric/contains_all/all-fields":         "score 1",
				"metric/json_correctness/large-input":    "score 0",
				"metric/tool_correctness/missing-fields": "missing_field for each of expected_tools",
				"metric/equals/missing-fields":           "missing_field for each of actual_output",
				"metric/levenshtein/determinism":         "same input twice gave the same output",
				"metric/is_json/judge/not-asked":         "no judge call",
			}},
		{name: "content", path: wasmPath("content"), configs: "content.yaml", transport: plugin.TransportWasm, skipped: 4, // one call per case: a call budget of 1 is not reached
			want: map[string]string{
				"metric/bias/judge/granted":              "1 batches, 1 judge requests, well formed; result score 0",
				"metric/pii_leakage/missing-fields":      "missing_field for each of actual_output",
				"metric/prompt_alignment/judge/granted":  "1 batches, 1 judge requests, well formed; result score 1",
				"metric/summarization/judge/granted":     "2 batches, 5 judge requests, well formed; result score 1",
				"metric/summarization/judge/call-budget": "error budget_exhausted",
			}},
		{name: "agent", path: wasmPath("agent"), configs: "agent.yaml", transport: plugin.TransportWasm, skipped: 2, // one call per case: a call budget of 1 is not reached
			want: map[string]string{
				"metric/argument_correctness/missing-fields": "missing_field for each of input, tools_called",
				"metric/argument_correctness/judge/granted":  "1 batches, 1 judge requests, well formed; result score 1",
				"metric/task_completion/judge/granted":       "1 batches, 1 judge requests, well formed; result score 0.5",
			}},
		{name: "similarity", path: wasmPath("similarity"), configs: "similarity.yaml", transport: plugin.TransportWasm, skipped: 1,
			want: map[string]string{
				"metric/similarity/judge/granted":      "1 batches, 1 judge requests (1 of them embed requests), well formed",
				"metric/similarity/judge/denied":       "error capability_denied, no crash",
				"metric/similarity/judge/token-budget": "error budget_exhausted, no crash",
				"metric/similarity/missing-fields":     "missing_field for each of actual_output",
				"metric/similarity/determinism":        "same input twice gave the same output",
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := run(t, Options{Path: c.path, Configs: configsFrom(t, c.configs), Verdicts: c.verdicts})
			// A kind that makes no judge call is cut short by a 1 ms
			// deadline only when its call takes longer: on a fast machine
			// none may, and the check says so and skips.
			fast := map[string]bool{}
			for _, r := range rep.Results {
				if strings.HasSuffix(r.Name, "/after-timeout") && r.Status == Skip && strings.Contains(r.Message, "finished within 1 ms") {
					fast[r.Name] = true
				}
			}
			if !rep.OK() || rep.Skipped != c.skipped+len(fast) || rep.Transport != c.transport {
				t.Fatalf("want 0 failed, %d skipped over %s; got %d failed, %d skipped over %s:\n%s",
					c.skipped, c.transport, rep.Failed, rep.Skipped, rep.Transport, dump(rep))
			}
			for name, text := range c.want {
				if fast[name] {
					continue
				}
				r := result(t, rep, name)
				if r.Status != Pass || !strings.Contains(r.Message, text) {
					t.Errorf("%s: %s %q; want PASS containing %q", name, r.Status, r.Message, text)
				}
			}
			if rep.Passed < 30 {
				t.Errorf("only %d checks passed:\n%s", rep.Passed, dump(rep))
			}
		})
	}
}

// Each misbehaving zoo guest fails, on the check that names its fault.
func TestZooFails(t *testing.T) {
	type want struct {
		check  string
		status Status
		text   string
	}
	cases := []struct {
		name    string
		configs map[string]json.RawMessage
		wants   []want
	}{
		{"dupdesc", nil, []want{{"load", Fail, `duplicate key "name"`}}},
		{"garbage", nil, []want{
			{"metric/notjson/all-fields", Fail, "abi_violation"},
			{"metric/badscore/all-fields", Fail, "score 7 is outside [0,1]"},
			// One kind's crash skips that kind's further checks (it has
			// failed), not the other kinds'.
			{"metric/badscore/determinism", Skip, "already failed"},
			{"metric/ok/determinism", Pass, "same input twice"},
			// Presence by length: a context of blank strings is missing.
			{"metric/countsitems/missing-fields", Fail, "context of blank strings: want error missing_field"},
		}},
		{"hostile", map[string]json.RawMessage{"hostile": json.RawMessage(`{"behaviour":"panic"}`)}, []want{{"metric/hostile/all-fields", Fail, "trap"}}},
		{"unasked", nil, []want{{"metric/ask/judge/not-asked", Fail, "called anvil_judge"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := run(t, Options{Path: wasmPath(c.name), Configs: c.configs})
			if rep.OK() {
				t.Fatalf("%s passed:\n%s", c.name, dump(rep))
			}
			for _, w := range c.wants {
				r := result(t, rep, w.check)
				if r.Status != w.status || !strings.Contains(r.Message, w.text) {
					t.Errorf("%s: %s %q; want %s containing %q", w.check, r.Status, r.Message, w.status, w.text)
				}
			}
		})
	}
	// The same guest doing honest work passes: the kit fails a fault, not
	// the plugin's origin.
	rep := run(t, Options{Path: wasmPath("hostile"), Configs: map[string]json.RawMessage{"hostile": json.RawMessage(`{"behaviour":"echo"}`)}})
	if !rep.OK() {
		t.Errorf("hostile with behaviour echo (honest work) fails:\n%s", dump(rep))
	}
}

// TestKindRefusingAnEmptyConfigIsSkipped: a kind whose config_schema
// requires nothing but which needs one of two fields (G-Eval over a
// conversation: criteria or evaluation_steps) refuses the kit's empty
// config with invalid_config; the kit skips it, saying what to pass,
// instead of failing the plugin (publishing the whole catalog failed on it).
func TestKindRefusingAnEmptyConfigIsSkipped(t *testing.T) {
	rep := run(t, Options{Path: wasmPath("geval")})
	for _, name := range []string{"metric/conversational_geval/prepare", "metric/conversational_geval/all-fields", "metric/conversational_geval/judge/granted"} {
		r := result(t, rep, name)
		if r.Status != Skip || !strings.Contains(r.Message, "refuses an empty config (invalid_config:") || !strings.Contains(r.Message, "--config conversational_geval=") {
			t.Errorf("%s: %s %s; want a skip saying what to pass", name, r.Status, r.Message)
		}
	}
	if rep.Failed != 0 {
		t.Errorf("%d checks failed on a plugin that only needs its configs", rep.Failed)
	}
}

// A kind whose config schema requires fields is skipped, naming the
// flag, when no config is given; a digest that does not match stops the
// run before anything is loaded.
func TestSkipAndDigest(t *testing.T) {
	rep := run(t, Options{Path: wasmPath("textcheck")})
	r := result(t, rep, "node/regex_match/*")
	if r.Status != Skip || r.Message != "config_schema requires pattern: pass --config regex_match='{...}' (or --config-file) to test this kind" {
		t.Errorf("regex_match without config: %s %q", r.Status, r.Message)
	}
	// Whether a kind's after-timeout check can cut a call short depends on
	// how fast the machine runs it (it skips when every call finished
	// within the shortest deadline): those skips are not counted.
	skipped := 0
	for _, r := range rep.Results {
		if r.Status == Skip && !strings.HasSuffix(r.Name, "/after-timeout") {
			skipped++
		}
	}
	if !rep.OK() || skipped != 2 {
		t.Errorf("want 0 failed, 2 skipped (after-timeout aside):\n%s", dump(rep))
	}

	rep = run(t, Options{Path: wasmPath("textcheck"), Digest: "sha256:" + strings.Repeat("0", 64)})
	if len(rep.Results) != 1 || rep.Results[0].Name != "digest" || rep.Results[0].Status != Fail || rep.Failed != 1 {
		t.Fatalf("digest mismatch:\n%s", dump(rep))
	}
	sum, err := plugin.FileDigest(wasmPath("textcheck"))
	if err != nil {
		t.Fatal(err)
	}
	rep = run(t, Options{Path: wasmPath("textcheck"), Digest: strings.TrimPrefix(sum, "sha256:"), Configs: configsFrom(t, "textcheck.yaml")})
	if r := result(t, rep, "digest"); r.Status != Pass || r.Message != sum+" matches --sha256" || !rep.OK() {
		t.Errorf("digest given: %s %q\n%s", r.Status, r.Message, dump(rep))
	}
}

// The text report is one line per check and a summary; the JSON report
// carries the same counts.
func TestReportFormats(t *testing.T) {
	rep := &Report{Results: []Result{{"load", Pass, "ok"}, {"metric/x/all-fields", Fail, "trap"}, {"node/y/*", Skip, "config"}}}
	finish(rep)
	var b bytes.Buffer
	if err := WriteText(&b, rep); err != nil {
		t.Fatal(err)
	}
	want := "PASS  load                 ok\nFAIL  metric/x/all-fields  trap\nSKIP  node/y/*             config\n1 passed, 1 failed, 1 skipped\n"
	if b.String() != want {
		t.Errorf("text report:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Passed != 1 || back.Failed != 1 || back.Skipped != 1 || back.Results[1].Status != Fail {
		t.Errorf("json report %s: %v", b.String(), err)
	}
}

// The scripted judge's replies satisfy the schemas the first-party kinds
// and the example metric send.
func TestInstanceOfSatisfiesSchema(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"verdict":{"type":"boolean"}},"required":["verdict"],"additionalProperties":false}`,
		`{"type":"object","properties":{"score":{"type":"integer","minimum":0,"maximum":10},"reason":{"type":"string"}},"required":["score","reason"],"additionalProperties":false}`,
		`{"type":"object","properties":{"steps":{"type":"array","items":{"type":"string","minLength":20},"minItems":3}},"required":["steps"]}`,
		`{"type":"object","properties":{"verdict":{"enum":["yes","no","idk"]},"x":{"type":["null","number"],"minimum":0.5}}}`,
	}
	wants := []string{
		`{"verdict":true}`,
		`{"reason":"conformance","score":5}`,
		`{"steps":["conformance conformance","conformance conformance","conformance conformance"]}`,
		`{"verdict":"yes","x":0.5}`,
	}
	for i, s := range schemas {
		var doc any
		if err := json.Unmarshal([]byte(s), &doc); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(instanceOf(doc, 0))
		if string(got) != wants[i] {
			t.Errorf("schema %d: %s; want %s", i, got, wants[i])
		}
		sch, err := plugin.CompileSchema([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		_ = json.Unmarshal(got, &v)
		if err := sch.Validate(v); err != nil {
			t.Errorf("schema %d: reply %s invalid: %v", i, got, err)
		}
	}
}

// Batch shapes a server would refuse are named.
func TestBatchShapes(t *testing.T) {
	bad := []struct {
		req  abi.JudgeRequest
		want string
	}{
		{abi.JudgeRequest{}, "batch 0 request 0 has no messages"},
		{abi.JudgeRequest{Messages: []abi.Message{{Role: "tool", Content: "x"}}}, `role "tool"`},
		{abi.JudgeRequest{Messages: []abi.Message{{Role: "user"}}}, "message 0 is empty"},
		{abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "x"}}, Schema: json.RawMessage(`{}`), SchemaName: "has space"}, `schema_name "has space"`},
	}
	for _, b := range bad {
		s := &services{batches: [][]abi.JudgeRequest{{b.req}}}
		if err := s.checkBatchShapes(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: %v; want %q", b.req, err, b.want)
		}
	}
	ok := &services{batches: [][]abi.JudgeRequest{{{Messages: []abi.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}, Schema: json.RawMessage(`{"type":"object"}`), SchemaName: "keyword_check"}}}}
	if err := ok.checkBatchShapes(); err != nil {
		t.Error(err)
	}
}

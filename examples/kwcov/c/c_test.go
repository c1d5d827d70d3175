package kwcovc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
)

// The module is built once, from source, by build.sh. Without a C
// toolchain for wasm32-wasi every test skips, saying what to install.
var (
	module     string // path of kwcov-c.wasm
	skipReason string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kwcov-c-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if skipReason = toolchain(dir); skipReason == "" {
		out, err := exec.Command("./build.sh", dir).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build.sh: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		module = filepath.Join(dir, "kwcov-c.wasm")
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// toolchain says why C plugins cannot be built here, or "" when they can:
// clang must link a wasm32-wasi reactor that uses libc's printf.
func toolchain(dir string) string {
	const install = "scripts/ci-deps-c installs clang, lld, wasi-libc and libclang-rt-dev-wasm32"
	if _, err := exec.LookPath("clang"); err != nil {
		return "clang not found; " + install
	}
	src := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\n__attribute__((export_name(\"f\"))) int f(void) { char b[32]; return snprintf(b, sizeof b, \"%g\", 0.5); }\n"), 0o644); err != nil {
		return err.Error()
	}
	out, err := exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-o", filepath.Join(dir, "probe.wasm"), src).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("clang cannot build a wasm32-wasi reactor (%v: %s); %s", err, bytes.TrimSpace(out), install)
	}
	return ""
}

func need(t *testing.T) string {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	return module
}

// ---- the specification, in Go, to compare the C module against ----

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

type expect struct {
	score   float64
	reason  string
	details map[string]any
}

func reference(keywords []string, caseSensitive bool, output string, verdict *bool) expect {
	hay := output
	if !caseSensitive {
		hay = lowerASCII(output)
	}
	found, missing := []any{}, []any{}
	var missingText []string
	for _, k := range keywords {
		needle := k
		if !caseSensitive {
			needle = lowerASCII(k)
		}
		if strings.Contains(hay, needle) {
			found = append(found, k)
		} else {
			missing = append(missing, k)
			missingText = append(missingText, k)
		}
	}
	e := expect{
		score:   float64(len(found)) / float64(len(keywords)),
		reason:  fmt.Sprintf("found %d of %d keywords", len(found), len(keywords)),
		details: map[string]any{"found": found, "missing": missing},
	}
	if len(missingText) > 0 {
		e.reason += "; missing: " + strings.Join(missingText, ", ")
	}
	if verdict != nil {
		e.details["judge"] = *verdict
		if !*verdict {
			e.score /= 2
			e.reason += "; judge: not meaningful"
		}
	}
	return e
}

func prompt(keywords []string, output string) string {
	return "Does the following answer use these keywords in a meaningful way? Keywords: " + strings.Join(keywords, ", ") +
		"\n\nAnswer:\n" + output + "\n\nReturn only a JSON object {\"verdict\": true|false}."
}

// ---- the dataset ----

const unicodeOutput = "À Paris, le café « Le Procope » — fondé en 1686 — sert encore des cafés ☕ ; CAFÉ CRÈME à la carte."

var cases = []abi.TestCase{
	{ID: "all", Input: "Capital of France?", ActualOutput: "Paris is the capital of France and its largest city."},
	{ID: "some", Input: "Capital of France?", ActualOutput: "The capital is Lyon."},
	{ID: "upper", Input: "Capital of France?", ActualOutput: "PARIS, CAPITAL OF FRANCE"},
	{ID: "unicode", Input: "Où boire un café à Paris ?", ActualOutput: unicodeOutput},
	{ID: "escapes", Input: "x", ActualOutput: "He said \"quoted\" and back\\slash,\na line\nbreak\tand \x01 control 😀 Paris"},
	{ID: "none", Input: "Capital of France?", ActualOutput: "No idea."},
	{ID: "no-output", Input: "Capital of France?"},
}

type metricSpec struct {
	name          string
	keywords      []string
	caseSensitive bool
	judgeCheck    bool
}

func (m metricSpec) yaml() string {
	params, _ := json.Marshal(map[string]any{"keywords": m.keywords, "case_sensitive": m.caseSensitive, "judge_check": m.judgeCheck})
	return fmt.Sprintf("  - name: %s\n    kind: keyword_coverage\n    params: %s\n", m.name, params)
}

var paris = []string{"Paris", "capital", "France"}

// evaluate runs metrics on cases through the real host (config, digest
// check, Wasm sandbox, engine) against judge, and indexes the results.
func evaluate(t *testing.T, judge *judgetest.Server, grantJudge bool, metrics []metricSpec, cs []abi.TestCase) map[string]map[string]host.MetricResult {
	t.Helper()
	return evaluateModule(t, module, judge, grantJudge, metrics, cs)
}

func evaluateModule(t *testing.T, module string, judge *judgetest.Server, grantJudge bool, metrics []metricSpec, cs []abi.TestCase) map[string]map[string]host.MetricResult {
	t.Helper()
	dir := t.TempDir()
	var y strings.Builder
	fmt.Fprintf(&y, "version: 1\njudges:\n  default: {base_url: %q, model: m, api_key_env: KWCOV_C_KEY, supports_json_schema: true, max_retries: 0}\n", judge.URL())
	fmt.Fprintf(&y, "plugins:\n  kwcov:\n    path: %q\n    sha256_file: %q\n    grants: {judge: %v}\n", module, module+".sha256", grantJudge)
	y.WriteString("defaults: {judge: default, threshold: 0.5}\nmetrics:\n")
	for _, m := range metrics {
		y.WriteString(m.yaml())
	}
	path := filepath.Join(dir, "anvil.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := host.LoadConfig(path)
	if err != nil {
		t.Fatalf("load config: %v\n%s", err, y.String())
	}
	res, err := host.Evaluate(context.Background(), cfg, cs, host.Options{
		Cache: "off", StorePath: filepath.Join(dir, "store.db"),
		Getenv: func(k string) string { return map[string]string{"KWCOV_C_KEY": "k"}[k] },
	})
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	out := map[string]map[string]host.MetricResult{}
	for _, c := range res.Cases {
		out[c.CaseID] = map[string]host.MetricResult{}
		for _, m := range c.Metrics {
			out[c.CaseID][m.Metric] = m
		}
	}
	if len(out) != len(cs) {
		t.Fatalf("results for %d cases, want %d", len(out), len(cs))
	}
	return out
}

func checkScored(t *testing.T, caseID string, got host.MetricResult, want expect) {
	t.Helper()
	if got.Error != nil || got.Score == nil {
		t.Errorf("case %s, metric %s: no score (status %s, error %v)", caseID, got.Metric, got.Status, got.Error)
		return
	}
	if *got.Score != want.score {
		t.Errorf("case %s, metric %s: score %v, want %v", caseID, got.Metric, *got.Score, want.score)
	}
	if got.Reason != want.reason {
		t.Errorf("case %s, metric %s: reason %q, want %q", caseID, got.Metric, got.Reason, want.reason)
	}
	var details map[string]any
	if err := json.Unmarshal(got.Details, &details); err != nil {
		t.Errorf("case %s, metric %s: details %s: %v", caseID, got.Metric, got.Details, err)
	} else if !reflect.DeepEqual(details, want.details) {
		t.Errorf("case %s, metric %s: details %v, want %v", caseID, got.Metric, details, want.details)
	}
	wantStatus := "failed"
	if want.score >= 0.5 {
		wantStatus = "passed"
	}
	if got.Status != wantStatus {
		t.Errorf("case %s, metric %s: status %s, want %s", caseID, got.Metric, got.Status, wantStatus)
	}
}

// TestDatasetThroughHost scores every case with four configurations and
// compares each result with the specification computed in Go: score,
// reason, details and the host's verdict.
func TestDatasetThroughHost(t *testing.T) {
	need(t)
	judge := judgetest.New(t)
	metrics := []metricSpec{
		{name: "kw", keywords: paris},
		{name: "kw_cs", keywords: paris, caseSensitive: true},
		{name: "kw_unicode", keywords: []string{"café", "CAFÉ", "crème", "☕", "fondé", "Procope", "Paris", "Paris"}},
		{name: "kw_escapes", keywords: []string{"\"quoted\"", "back\\slash", "line\nbreak", "😀", "\x01", "PARIS", "absent \"one\""}},
	}
	res := evaluate(t, judge, true, metrics, cases)
	for _, c := range cases {
		for _, m := range metrics {
			got := res[c.ID][m.name]
			if c.ActualOutput == "" {
				if got.Status != "skipped" || got.Error == nil || got.Error.Code != abi.CodeMissingField || got.Error.Field != "actual_output" {
					t.Errorf("case %s, metric %s: %s %+v, want skipped with missing_field actual_output", c.ID, m.name, got.Status, got.Error)
				}
				continue
			}
			checkScored(t, c.ID, got, reference(m.keywords, m.caseSensitive, c.ActualOutput, nil))
		}
	}
	// The reference itself, on the cases that show the rules.
	spot := []struct {
		caseID, metric, reason string
		score                  float64
	}{
		{"some", "kw", "found 1 of 3 keywords; missing: Paris, France", 1.0 / 3},
		{"upper", "kw", "found 3 of 3 keywords", 1},
		{"upper", "kw_cs", "found 0 of 3 keywords; missing: Paris, capital, France", 0},
		// ASCII-only lowering: CAFÉ matches "CAFÉ" (É untouched), crème does not match "CRÈME".
		{"unicode", "kw_unicode", "found 7 of 8 keywords; missing: crème", 7.0 / 8},
		{"escapes", "kw_escapes", "found 6 of 7 keywords; missing: absent \"one\"", 6.0 / 7},
	}
	for _, s := range spot {
		got := res[s.caseID][s.metric]
		if got.Score == nil || *got.Score != s.score || got.Reason != s.reason {
			t.Errorf("case %s, metric %s: score %v reason %q, want %v %q", s.caseID, s.metric, got.Score, got.Reason, s.score, s.reason)
		}
	}
	if n := judge.Calls(); n != 0 {
		t.Errorf("judge called %d times without judge_check", n)
	}
}

// TestJudgeCheck: one judge request per scored case, exactly as specified;
// a false verdict halves the score and says so.
func TestJudgeCheck(t *testing.T) {
	need(t)
	judge := judgetest.New(t)
	judge.On(judgetest.ContainsMessage("Lyon"), judgetest.Reply{Content: `{"verdict": false}`})
	judge.On(judgetest.ContainsMessage("No idea"), judgetest.Reply{Content: `{"verdict": false}`})
	judge.SetDefault(judgetest.Reply{Content: `{"verdict": true}`})
	m := metricSpec{name: "kw_judge", keywords: paris, judgeCheck: true}
	res := evaluate(t, judge, true, []metricSpec{m}, cases)

	scored := 0
	for _, c := range cases {
		got := res[c.ID][m.name]
		if c.ActualOutput == "" {
			if got.Status != "skipped" {
				t.Errorf("case %s: status %s, want skipped", c.ID, got.Status)
			}
			continue
		}
		scored++
		verdict := !strings.Contains(c.ActualOutput, "Lyon") && !strings.Contains(c.ActualOutput, "No idea")
		checkScored(t, c.ID, got, reference(m.keywords, false, c.ActualOutput, &verdict))
		if got.Usage.Requests != 1 {
			t.Errorf("case %s: %d judge requests, want 1", c.ID, got.Usage.Requests)
		}
	}
	if got := res["some"][m.name]; got.Score == nil || *got.Score != 1.0/6 || got.Reason != "found 1 of 3 keywords; missing: Paris, France; judge: not meaningful" {
		t.Errorf("case some: score %v reason %q, want 1/6, halved and said so", got.Score, got.Reason)
	}

	reqs := judge.Requests()
	if len(reqs) != scored {
		t.Fatalf("judge received %d requests, want one per scored case (%d)", len(reqs), scored)
	}
	prompts := map[string]bool{}
	for _, c := range cases {
		if c.ActualOutput != "" {
			prompts[prompt(paris, c.ActualOutput)] = true
		}
	}
	var schema = map[string]any{"type": "object", "properties": map[string]any{"verdict": map[string]any{"type": "boolean"}},
		"required": []any{"verdict"}, "additionalProperties": false}
	for _, r := range reqs {
		if len(r.Messages) != 1 || r.Messages[0].Role != "user" || !prompts[r.Messages[0].Content] {
			t.Errorf("judge request %d: messages %+v, want one user message with the specified prompt", r.Seq, r.Messages)
			continue
		}
		delete(prompts, r.Messages[0].Content)
		if r.Temperature == nil || *r.Temperature != 0 {
			t.Errorf("judge request %d: temperature %v, want 0", r.Seq, r.Temperature)
		}
		if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil || r.ResponseFormat.JSONSchema.Name != "keyword_check" {
			t.Errorf("judge request %d: response_format %+v, want json_schema keyword_check", r.Seq, r.ResponseFormat)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal(r.ResponseFormat.JSONSchema.Schema, &got); err != nil || !reflect.DeepEqual(got, schema) {
			t.Errorf("judge request %d: schema %s, want %v", r.Seq, r.ResponseFormat.JSONSchema.Schema, schema)
		}
	}
}

// TestJudgeErrorsPropagate: the host's error code becomes the result's.
func TestJudgeErrorsPropagate(t *testing.T) {
	need(t)
	m := metricSpec{name: "kw_judge", keywords: paris, judgeCheck: true}
	for _, tc := range []struct {
		name  string
		grant bool
		reply judgetest.Reply
		code  abi.Code
	}{
		{"not granted", false, judgetest.Reply{Content: `{"verdict": true}`}, abi.CodeCapability},
		{"unusable reply", true, judgetest.Reply{Content: "I think so."}, abi.CodeJudge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judge := judgetest.New(t)
			judge.SetDefault(tc.reply)
			res := evaluate(t, judge, tc.grant, []metricSpec{m}, cases[:2])
			for _, c := range cases[:2] {
				got := res[c.ID][m.name]
				if got.Status != "error" || got.Score != nil || got.Error == nil || got.Error.Code != tc.code {
					t.Errorf("case %s: status %s score %v error %+v, want error %s from the judge", c.ID, got.Status, got.Score, got.Error, tc.code)
				}
			}
		})
	}
}

// TestConfigSchemaRejectsUnknownField: the descriptor's config schema
// stops a misspelt field before the run, naming it.
func TestConfigSchemaRejectsUnknownField(t *testing.T) {
	need(t)
	judge := judgetest.New(t)
	dir := t.TempDir()
	y := fmt.Sprintf("version: 1\njudges:\n  default: {base_url: %q, model: m, api_key_env: KWCOV_C_KEY}\n"+
		"plugins:\n  kwcov-c: {path: %q, sha256_file: %q, grants: {judge: true}}\n"+
		"defaults: {judge: default}\nmetrics:\n  - name: kw\n    kind: keyword_coverage\n    params: {keywords: [a], casesensitive: true}\n",
		judge.URL(), module, module+".sha256")
	path := filepath.Join(dir, "anvil.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := host.LoadConfig(path)
	if err == nil {
		_, err = host.Evaluate(context.Background(), cfg, cases[:1], host.Options{Cache: "off", StorePath: filepath.Join(dir, "s.db"),
			Getenv: func(string) string { return "k" }})
	}
	if err == nil || !strings.Contains(err.Error(), "casesensitive") {
		t.Fatalf("err = %v, want a config error naming casesensitive", err)
	}
}

// ---- the module called directly through Extism, as the host does ----

type direct struct {
	t    *testing.T
	p    *extism.Plugin
	logs []string
}

func load(t *testing.T) *direct {
	t.Helper()
	wasm, err := os.ReadFile(need(t))
	if err != nil {
		t.Fatal(err)
	}
	d := &direct{t: t}
	judge := extism.NewHostFunctionWithStack("anvil_judge", func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		off, err := p.WriteBytes([]byte(`{"responses":[],"error":{"code":"capability_denied","message":"not granted"}}`))
		if err != nil {
			panic(err)
		}
		stack[0] = off
	}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
	logf := extism.NewHostFunctionWithStack("anvil_log", func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		b, err := p.ReadBytes(stack[0])
		if err != nil {
			panic(err)
		}
		d.logs = append(d.logs, string(b))
	}, []extism.ValueType{extism.ValueTypePTR}, nil)
	judge.SetNamespace("extism:host/user")
	logf.SetNamespace("extism:host/user")
	ctx := context.Background()
	p, err := extism.NewPlugin(ctx, extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: wasm}},
		Memory: &extism.ManifestMemory{MaxPages: 512},
	}, extism.PluginConfig{EnableWasi: true}, []extism.HostFunction{judge, logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	d.p = p
	return d
}

func (d *direct) call(export string, in string) (uint32, []byte, error) {
	return d.p.Call(export, []byte(in))
}

func (d *direct) measure(in string) abi.MeasureResult {
	d.t.Helper()
	rc, out, err := d.call("anvil_measure", in)
	if err != nil || rc != 0 {
		d.t.Fatalf("anvil_measure(%.200s): rc %d err %v", in, rc, err)
	}
	var res abi.MeasureResult
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		d.t.Fatalf("anvil_measure output %s: %v", out, err)
	}
	return res
}

func req(config, actualOutput string) string {
	c := map[string]any{"id": "c1"}
	if actualOutput != "" {
		c["actual_output"] = actualOutput
	}
	b, _ := json.Marshal(map[string]any{"kind": "keyword_coverage", "metric": "kw", "threshold": 0.5, "case": c, "config": json.RawMessage(config)})
	return string(b)
}

func TestDescriptor(t *testing.T) {
	d := load(t)
	rc, out, err := d.call("anvil_describe", "")
	if err != nil || rc != 0 {
		t.Fatalf("anvil_describe: rc %d err %v", rc, err)
	}
	var desc abi.Descriptor
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&desc); err != nil {
		t.Fatalf("descriptor %s: %v", out, err)
	}
	if desc.Name != "kwcov-c" || desc.Version != "0.1.0" || desc.ABIMajor != 1 || len(desc.Kinds) != 1 ||
		!reflect.DeepEqual(desc.Capabilities, []abi.Capability{abi.CapJudge}) {
		t.Fatalf("descriptor %s", out)
	}
	k := desc.Kinds[0]
	if k.Name != "keyword_coverage" || k.Role != abi.RoleMetric || !reflect.DeepEqual(k.RequiredFields, []string{"actual_output"}) || k.Prepare {
		t.Fatalf("kind %+v", k)
	}
}

// TestConfigErrors: the guest's own strict config reading (the host's
// schema check runs first in a real run; `plugin call` and other hosts
// rely on this one).
func TestConfigErrors(t *testing.T) {
	d := load(t)
	for _, tc := range []struct {
		config, field string
	}{
		{`{"keywords":["a"],"casesensitive":true}`, "casesensitive"},
		{`{"keywords":["a"],"k\u00e9y":1}`, "kéy"},
		{`{}`, "keywords"},
		{`null`, "keywords"},
		{`{"keywords":[]}`, "keywords"},
		{`{"keywords":null}`, "keywords"},
		{`{"keywords":"Paris"}`, "keywords"},
		{`{"keywords":["Paris",3]}`, "keywords"},
		{`{"keywords":["Paris",""]}`, "keywords"},
		{`{"keywords":["a"],"case_sensitive":"yes"}`, "case_sensitive"},
		{`{"keywords":["a"],"judge_check":1}`, "judge_check"},
	} {
		res := d.measure(req(tc.config, "a"))
		if res.Error == nil || res.Error.Code != abi.CodeInvalidConfig || res.Error.Field != tc.field || res.Score != nil || res.Success || res.Threshold != 0.5 {
			t.Errorf("config %s: result %+v error %+v, want invalid_config naming %q", tc.config, res, res.Error, tc.field)
		}
		if res.Error != nil && !strings.Contains(res.Error.Message, tc.field) {
			t.Errorf("config %s: message %q does not name %q", tc.config, res.Error.Message, tc.field)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	d := load(t)
	res := d.measure(req(`{"keywords":["a"]}`, ""))
	if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != "actual_output" || res.Error.Message != `case "c1" has no actual_output` {
		t.Errorf("no actual_output: %+v", res.Error)
	}
	res = d.measure(`{"kind":"other","metric":"m","threshold":0.25,"case":{"id":"x"}}`)
	if res.Error == nil || res.Error.Code != abi.CodeABI || res.Error.Message != `plugin kwcov-c has no kind "other"` || res.Threshold != 0.25 {
		t.Errorf("unknown kind: %+v %+v", res, res.Error)
	}
	// Unreadable input is ABI misuse: non-zero return with an Extism error.
	for _, in := range []string{`{"kind":`, `[1]`, `{"a":"\ud800`, "{\"a\":\"\xff\"}", `{"a":1}{}`, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		rc, _, err := d.call("anvil_measure", in)
		if rc == 0 || err == nil || !strings.Contains(err.Error(), "decode request") {
			t.Errorf("input %.40q: rc %d err %v, want non-zero with a decode error", in, rc, err)
		}
	}
	// The instance still serves after those.
	if res := d.measure(req(`{"keywords":["a"]}`, "a")); res.Score == nil || *res.Score != 1 {
		t.Errorf("after bad inputs: %+v", res)
	}
}

// TestEscapesAndUnicode: \uXXXX escapes, surrogate pairs and a lone
// surrogate (U+FFFD, as Go decodes it) in the request; escapes in the output.
func TestEscapesAndUnicode(t *testing.T) {
	d := load(t)
	in := `{"kind":"keyword_coverage","metric":"kw","threshold":0.5,` +
		`"config":{"keywords":["caf\u00e9","\ud83d\ude00","\ufffd","tab\there","\"q\\\"","\u0000","miss\u2028ing"]},` +
		`"case":{"id":"u","actual_output":"Caf\u00e9 \ud83d\ude00 \ud800 tab\there \"q\\\" nul:\u0000."}}`
	res := d.measure(in)
	if res.Score == nil || *res.Score != 6.0/7 {
		t.Fatalf("score %v, want 6/7 (%+v %+v)", res.Score, res, res.Error)
	}
	var det struct{ Found, Missing []string }
	if err := json.Unmarshal(res.Details, &det); err != nil {
		t.Fatal(err)
	}
	wantFound := []string{"café", "😀", "\ufffd", "tab\there", "\"q\\\"", "\x00"}
	if !reflect.DeepEqual(det.Found, wantFound) || !reflect.DeepEqual(det.Missing, []string{"miss\u2028ing"}) {
		t.Errorf("details found %q missing %q, want %q and [miss\\u2028ing]", det.Found, det.Missing, wantFound)
	}
	if res.Reason != "found 6 of 7 keywords; missing: miss\u2028ing" {
		t.Errorf("reason %q", res.Reason)
	}
}

// TestLargeInputsNoLeak: a 1 MiB answer, 40 times on one instance with
// 32 MiB of memory. Each call mallocs three copies of the answer (the
// request, the decoded string, the lowered copy): were any of them kept,
// the instance would run out of memory well before the 40th call.
func TestLargeInputsNoLeak(t *testing.T) {
	d := load(t)
	big := strings.Repeat("lorem ipsum ", 1<<20/12) + "NEEDLE"
	in := req(`{"keywords":["needle","absent"]}`, big)
	for i := range 40 {
		res := d.measure(in)
		if res.Score == nil || *res.Score != 0.5 || res.Reason != "found 1 of 2 keywords; missing: absent" {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
}

// TestImportsAndExports: exactly the documented Wasm signatures, a
// reactor (_initialize, no _start), the marker and the two exports.
func TestImportsAndExports(t *testing.T) {
	wasm, err := os.ReadFile(need(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	type sig struct{ params, results []api.ValueType }
	known := map[string]sig{
		"extism:host/env.input_length":   {nil, []api.ValueType{i64}},
		"extism:host/env.input_load_u8":  {[]api.ValueType{i64}, []api.ValueType{i32}},
		"extism:host/env.input_load_u64": {[]api.ValueType{i64}, []api.ValueType{i64}},
		"extism:host/env.alloc":          {[]api.ValueType{i64}, []api.ValueType{i64}},
		"extism:host/env.free":           {[]api.ValueType{i64}, nil},
		"extism:host/env.length":         {[]api.ValueType{i64}, []api.ValueType{i64}},
		"extism:host/env.load_u8":        {[]api.ValueType{i64}, []api.ValueType{i32}},
		"extism:host/env.load_u64":       {[]api.ValueType{i64}, []api.ValueType{i64}},
		"extism:host/env.store_u8":       {[]api.ValueType{i64, i32}, nil},
		"extism:host/env.store_u64":      {[]api.ValueType{i64, i64}, nil},
		"extism:host/env.output_set":     {[]api.ValueType{i64, i64}, nil},
		"extism:host/env.error_set":      {[]api.ValueType{i64}, nil},
		"extism:host/user.anvil_judge":   {[]api.ValueType{i64}, []api.ValueType{i64}},
		"extism:host/user.anvil_log":     {[]api.ValueType{i64}, nil},
	}
	seen := map[string]bool{}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		key := mod + "." + name
		seen[key] = true
		if mod == "wasi_snapshot_preview1" {
			continue
		}
		want, ok := known[key]
		if !ok {
			t.Errorf("unexpected import %s", key)
			continue
		}
		if !reflect.DeepEqual(f.ParamTypes(), want.params) && !(len(f.ParamTypes()) == 0 && len(want.params) == 0) ||
			!reflect.DeepEqual(f.ResultTypes(), want.results) && !(len(f.ResultTypes()) == 0 && len(want.results) == 0) {
			t.Errorf("import %s: %v -> %v, want %v -> %v", key, f.ParamTypes(), f.ResultTypes(), want.params, want.results)
		}
	}
	for _, k := range []string{"extism:host/env.input_length", "extism:host/env.output_set", "extism:host/user.anvil_judge"} {
		if !seen[k] {
			t.Errorf("import %s missing", k)
		}
	}
	exports := cm.ExportedFunctions()
	for _, e := range []string{"anvil_abi_v1", "anvil_describe", "anvil_measure", "_initialize"} {
		if _, ok := exports[e]; !ok {
			t.Errorf("export %s missing", e)
		}
	}
	for _, e := range []string{"_start", "anvil_node", "anvil_prepare"} {
		if _, ok := exports[e]; ok {
			t.Errorf("unexpected export %s", e)
		}
	}
	for _, e := range []string{"anvil_describe", "anvil_measure"} {
		if f := exports[e]; f != nil && (len(f.ParamTypes()) != 0 || !reflect.DeepEqual(f.ResultTypes(), []api.ValueType{i32})) {
			t.Errorf("export %s: %v -> %v, want () -> i32", e, f.ParamTypes(), f.ResultTypes())
		}
	}
	st, _ := os.Stat(module)
	t.Logf("kwcov-c.wasm: %d bytes", st.Size())
}

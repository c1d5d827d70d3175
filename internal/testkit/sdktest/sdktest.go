// Package sdktest is the plugin SDKs' parity kit (their TCK): the one
// suite every SDK's tests run against a probe plugin built with that SDK,
// through the real host (host.Evaluate, and `plugin test` for the
// conformance kit) and the fake judge of host/judgetest. An SDK in any
// language passes when its probe passes RunParity. Its probe must offer:
//
//   - a cosine kind: embeds actual_output and expected_output through the
//     host's embeddings call (one call per case), scores their cosine
//     clamped to [0,1], details {"cosine", "dimensions"}, and passes the
//     host's refusal (its code and message) on as the result's error;
//   - a turns kind requiring turns and last_user_turn: score the share of
//     assistant turns, reason "N of M turns are the assistant's", details
//     {"roles", "last_user_turn", "last_assistant_turn", "tools",
//     "retrieval_context", "scenario", "chatbot_role"} (plus "rendered",
//     the host's abi.TurnsText, and "conversational" when the SDK renders
//     turns), every string byte for byte as given;
//   - optionally a presence kind requiring neither context field: details
//     {"context", "retrieval_context"}, the SDK's answer to whether each is
//     present, held to abi/v1/testdata/presence.json;
//   - kinds that pass the conformance kit (all of them, unless the probe
//     names the ones meant to).
//
// Evaluate, the helper the suite runs cases with, is also what the SDKs'
// and examples' own tests use to evaluate one metric of a built plugin,
// and Once what they build it with, once per test binary. The suite's
// expected values are the same for every SDK: a Probe says only which
// optional parts its probe has, never what they answer.
package sdktest

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/tetratelabs/wazero"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
)

// Plugin is a built plugin as a config names it.
type Plugin struct {
	Name string // its key under plugins:
	// Path is the artifact; its digest is SHA256 when set (pinned in the
	// config), else in Path+".sha256".
	Path      string
	SHA256    string
	Transport string // "" is wasm; "process" a sandboxed process plugin
	Limits    string // the plugin's limits as YAML flow, or ""
}

// Metric is the one metric Evaluate runs.
type Metric struct {
	Name   string // "m" when ""
	Kind   string
	Params string // the kind's config as YAML flow, or ""
	// Judge is the default judge's server; a fresh one when nil.
	Judge          *judgetest.Server
	Grant          bool   // grants.judge
	EmbeddingModel string // the judge's embedding_model, or ""
	JSONSchema     bool   // the judge's supports_json_schema
	Logger         *slog.Logger
}

// apiKeyEnv is the variable the configs name for the judge's key; only
// Evaluate's Getenv answers it.
const apiKeyEnv = "SDKTEST_KEY"

// Evaluate runs m of p on cases through host.Evaluate and returns each
// case's result by id; any error is fatal.
func Evaluate(t testing.TB, p Plugin, m Metric, cases ...abi.TestCase) map[string]host.MetricResult {
	t.Helper()
	out, err := TryEvaluate(t, p, m, cases...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryEvaluate is Evaluate returning host.Evaluate's error, for a test that
// expects one; a result per case is still required when there is none.
func TryEvaluate(t testing.TB, p Plugin, m Metric, cases ...abi.TestCase) (map[string]host.MetricResult, error) {
	t.Helper()
	if m.Judge == nil {
		m.Judge = judgetest.New(t)
	}
	var judge, plugin, metric strings.Builder
	fmt.Fprintf(&judge, "{base_url: %q, model: m, api_key_env: %s", m.Judge.URL(), apiKeyEnv)
	if m.EmbeddingModel != "" {
		fmt.Fprintf(&judge, ", embedding_model: %s", m.EmbeddingModel)
	}
	if m.JSONSchema {
		judge.WriteString(", supports_json_schema: true")
	}
	judge.WriteString("}")
	fmt.Fprintf(&plugin, "{path: %q, ", p.Path)
	if p.SHA256 != "" {
		fmt.Fprintf(&plugin, "sha256: %q", p.SHA256)
	} else {
		fmt.Fprintf(&plugin, "sha256_file: %q", p.Path+".sha256")
	}
	fmt.Fprintf(&plugin, ", grants: {judge: %t}", m.Grant)
	if p.Transport != "" {
		fmt.Fprintf(&plugin, ", transport: %s", p.Transport)
	}
	if p.Limits != "" {
		fmt.Fprintf(&plugin, ", limits: %s", p.Limits)
	}
	plugin.WriteString("}")
	if m.Name == "" {
		m.Name = "m"
	}
	fmt.Fprintf(&metric, "  - name: %s\n    kind: %s\n    threshold: 0.5\n", m.Name, m.Kind)
	if m.Params != "" {
		fmt.Fprintf(&metric, "    params: %s\n", m.Params)
	}
	cfg := fmt.Sprintf("version: 1\njudges:\n  default: %s\nplugins:\n  %s: %s\nmetrics:\n%s", judge.String(), p.Name, plugin.String(), metric.String())
	dir := t.TempDir()
	path := filepath.Join(dir, "anvil.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := host.LoadConfig(path)
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, cfg)
	}
	res, err := host.Evaluate(context.Background(), c, cases, host.Options{
		Cache:     "off",
		StorePath: filepath.Join(dir, "store.db"),
		Logger:    m.Logger,
		Getenv:    func(k string) string { return map[string]string{apiKeyEnv: "k"}[k] },
	})
	if err != nil {
		return nil, fmt.Errorf("evaluating %s of %s: %w", m.Kind, p.Name, err)
	}
	out := map[string]host.MetricResult{}
	for _, cr := range res.Cases {
		if len(cr.Metrics) != 1 {
			t.Fatalf("case %s: %d metric results, want 1", cr.CaseID, len(cr.Metrics))
		}
		out[cr.CaseID] = cr.Metrics[0]
	}
	if len(out) != len(cases) {
		t.Fatalf("%d results for %d cases", len(out), len(cases))
	}
	return out, nil
}

// Probe is an SDK's probe plugin and what the suite may expect of it.
type Probe struct {
	Plugin
	// Cosine, Turns and Presence name the probe's kinds (see the package
	// comment); Presence "" skips the presence subtest, saying why in
	// NoPresence.
	Cosine, Turns, Presence string
	NoPresence              string
	// RendersTurns: the turns kind's details also carry rendered and
	// conversational.
	RendersTurns bool
	// NoEmbed is a Wasm module built with the SDK that never embeds: it
	// must not import the host's embed function, which the probe must.
	// "" skips that check (a process plugin imports nothing).
	NoEmbed string
	// Conforming names the kinds the conformance kit must pass when the
	// probe has others that break the ABI on purpose; nil means every
	// kind, and the kit's exit code must be 0.
	Conforming []string
}

// RunParity runs the parity suite on p as subtests of t.
func RunParity(t *testing.T, p Probe) {
	t.Run("Embed", func(t *testing.T) { embed(t, p) })
	t.Run("EmbedRefused", func(t *testing.T) { embedRefused(t, p) })
	t.Run("Turns", func(t *testing.T) { turns(t, p) })
	t.Run("Presence", func(t *testing.T) {
		if p.Presence == "" {
			t.Skip(p.NoPresence)
		}
		presence(t, p)
	})
	t.Run("EmbedImportOnlyWhenUsed", func(t *testing.T) {
		if p.NoEmbed == "" {
			t.Skip("not a Wasm SDK: nothing is imported")
		}
		embedImportOnlyWhenUsed(t, p)
	})
	t.Run("Conformance", func(t *testing.T) { conformance(t, p) })
}

// vectors are what the fake judge embeds each text to, so the cosines
// are known: Paris./Paris 1/√2, hot/cold −1 (scored 0), 12/12 1.
var vectors = map[string][]float64{"Paris.": {1, 1}, "Paris": {1, 0}, "hot": {-1, 0}, "cold": {1, 0}, "12": {3, 4}}

func embedJudge(t *testing.T) *judgetest.Server {
	return judgetest.New(t, judgetest.WithEmbeddings(func(_, text string) []float64 {
		if v, ok := vectors[text]; ok {
			return v
		}
		t.Errorf("the judge was asked to embed %q", text)
		return []float64{1, 1}
	}))
}

var embedCases = []abi.TestCase{
	{ID: "near", ActualOutput: "Paris.", ExpectedOutput: "Paris"},
	{ID: "opposite", ActualOutput: "hot", ExpectedOutput: "cold"},
	{ID: "same", ActualOutput: "12", ExpectedOutput: "12"},
}

// embed: the SDK's embed call through the host and the judge layer to the
// fake judge's embeddings endpoint: the scores are the cosines of the
// vectors the judge gave each text, and each case is one embeddings call.
func embed(t *testing.T, p Probe) {
	judge := embedJudge(t)
	got := Evaluate(t, p.Plugin, Metric{Kind: p.Cosine, Judge: judge, Grant: true, EmbeddingModel: "emb"}, embedCases...)
	for id, want := range map[string]struct {
		score, cosine float64
		status        string
	}{
		"near":     {1 / math.Sqrt2, 1 / math.Sqrt2, "passed"},
		"opposite": {0, -1, "failed"},
		"same":     {1, 1, "passed"},
	} {
		m := got[id]
		if m.Error != nil || m.Score == nil || math.Abs(*m.Score-want.score) > 1e-12 || m.Status != want.status {
			t.Errorf("%s: %s score %v error %v; want %s %v", id, m.Status, m.Score, m.Error, want.status, want.score)
			continue
		}
		var d struct {
			Cosine     float64 `json:"cosine"`
			Dimensions int     `json:"dimensions"`
		}
		if err := json.Unmarshal(m.Details, &d); err != nil || math.Abs(d.Cosine-want.cosine) > 1e-12 || d.Dimensions != 2 {
			t.Errorf("%s: details %s (%v); want cosine %v, 2 dimensions", id, m.Details, err, want.cosine)
		}
	}
	if judge.Calls() != len(embedCases) {
		t.Errorf("%d judge calls; want one embeddings call per case", judge.Calls())
	}
	for _, r := range judge.Requests() {
		if !r.Embedding {
			t.Errorf("a request that is not an embedding: %+v", r)
		}
	}
}

// embedRefused: the host's refusals reach the kind with the host's code,
// which the result keeps: capability_denied without the judge grant,
// invalid_config naming embedding_model when the judge has none. Neither
// reaches the judge.
func embedRefused(t *testing.T, p Probe) {
	judge := embedJudge(t)
	for _, tc := range []struct {
		name  string
		grant bool
		model string
		code  abi.Code
		msg   string
	}{
		{"not granted", false, "emb", abi.CodeCapability, ""},
		{"no embedding model", true, "", abi.CodeInvalidConfig, "embedding_model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Evaluate(t, p.Plugin, Metric{Kind: p.Cosine, Judge: judge, Grant: tc.grant, EmbeddingModel: tc.model}, embedCases[0])["near"]
			if m.Error == nil || m.Error.Code != tc.code || !strings.Contains(m.Error.Message, tc.msg) || m.Score != nil {
				t.Errorf("result %+v error %+v; want %s saying %q", m, m.Error, tc.code, tc.msg)
			}
		})
	}
	if judge.Calls() != 0 {
		t.Errorf("%d judge calls; want none", judge.Calls())
	}
}

// conversation is a case of every turn shape: a system prompt, a turn of
// tools only, retrieval context on a turn, non-ASCII content, and JSON's
// escapes and the characters a JavaScript or C writer may mishandle.
var conversation = abi.TestCase{
	ID:          "conv",
	Scenario:    "a customer asks where an order is",
	ChatbotRole: "a courteous support agent",
	Turns: []abi.Turn{
		{Role: abi.RoleSystem, Content: "Be brief."},
		{Role: abi.RoleUser, Content: "Where is order o-1? 📦"},
		{Role: abi.RoleAssistant, ToolsCalled: []abi.ToolCall{{Name: "lookup_order", Arguments: []byte(`{"id":"o-1"}`)}},
			RetrievalContext: []string{"o-1 shipped on Monday"}},
		{Role: abi.RoleAssistant, Content: "It shipped on Monday <b>&</b>."},
		{Role: abi.RoleUser, Content: "Thanks \"ü\" \u2028\u2029 \x01\x1f\b\f\t\\"},
		{Role: abi.RoleAssistant, Content: "You're welcome."},
	},
}

// turns: the SDK's turn reading over a conversational case's turns, their
// tools and retrieval context, and the conversation's fields, every string
// kept byte for byte; a single-turn case, or one with no user turn, is
// missing_field naming the field the kind requires.
func turns(t *testing.T, p Probe) {
	got := Evaluate(t, p.Plugin, Metric{Kind: p.Turns}, conversation,
		abi.TestCase{ID: "single", Input: "q", ActualOutput: "a"},
		abi.TestCase{ID: "no-user", Turns: []abi.Turn{{Role: abi.RoleAssistant, Content: "Hello?"}}})
	m := got["conv"]
	if m.Error != nil || m.Score == nil || *m.Score != 0.5 || m.Reason != "3 of 6 turns are the assistant's" {
		t.Fatalf("conv: score %v reason %q error %v; want 0.5", m.Score, m.Reason, m.Error)
	}
	want := map[string]any{
		"roles":               []any{"system", "user", "assistant", "assistant", "user", "assistant"},
		"last_user_turn":      conversation.Turns[4].Content,
		"last_assistant_turn": conversation.Turns[5].Content,
		"tools":               []any{"lookup_order"},
		"retrieval_context":   []any{"o-1 shipped on Monday"},
		"scenario":            conversation.Scenario,
		"chatbot_role":        conversation.ChatbotRole,
	}
	if p.RendersTurns {
		rendered, _ := abi.TurnsText(conversation.Turns)
		want["rendered"], want["conversational"] = rendered, true
	}
	var d any
	if err := json.Unmarshal(m.Details, &d); err != nil || !reflect.DeepEqual(d, any(want)) {
		w, _ := json.Marshal(want)
		t.Errorf("conv: details %s (%v)\nwant %s", m.Details, err, w)
	}
	for id, field := range map[string]string{"single": abi.FieldTurns, "no-user": abi.FieldLastUserTurn} {
		if m := got[id]; m.Error == nil || m.Error.Code != abi.CodeMissingField || m.Error.Field != field {
			t.Errorf("%s: error %+v; want missing_field %s", id, m.Error, field)
		}
	}
}

// presence: the SDK's answer to whether context and retrieval_context are
// present follows the presence table the host is held to
// (abi/v1/testdata/presence.json): a list of only white-space strings is
// absent, white space being exactly Go's unicode.IsSpace, whatever the
// language's own trim takes. The kind requires neither field, so the host
// passes every row to it.
func presence(t *testing.T, p Probe) {
	var cases []abi.TestCase
	type want struct {
		row                       string
		context, retrievalContext bool
	}
	wants := map[string]want{}
	for i, row := range PresenceRows(t) {
		c := abi.TestCase{ID: fmt.Sprintf("%d-context", i), ActualOutput: "x", Context: row.Items}
		r := abi.TestCase{ID: fmt.Sprintf("%d-retrieval", i), ActualOutput: "x", RetrievalContext: row.Items}
		cases = append(cases, c, r)
		wants[c.ID] = want{row.Name + " in context", row.Present, false}
		wants[r.ID] = want{row.Name + " in retrieval_context", false, row.Present}
	}
	got := Evaluate(t, p.Plugin, Metric{Kind: p.Presence}, cases...)
	for _, c := range cases {
		w, m := wants[c.ID], got[c.ID]
		var d struct {
			Context          *bool `json:"context"`
			RetrievalContext *bool `json:"retrieval_context"`
		}
		if m.Error != nil || json.Unmarshal(m.Details, &d) != nil || d.Context == nil || d.RetrievalContext == nil {
			t.Errorf("%s: details %s error %v", w.row, m.Details, m.Error)
			continue
		}
		if *d.Context != w.context || *d.RetrievalContext != w.retrievalContext {
			t.Errorf("%s: has context %t, retrieval_context %t; want %t, %t", w.row, *d.Context, *d.RetrievalContext, w.context, w.retrievalContext)
		}
	}
}

// PresenceRow is one row of abi/v1/testdata/presence.json.
type PresenceRow struct {
	Name    string   `json:"name"`
	Items   []string `json:"items"`
	Present bool     `json:"present"`
}

// PresenceRows reads the presence table the host is held to, for an SDK's
// own (native) check of the same rows.
func PresenceRows(t testing.TB) []PresenceRow {
	t.Helper()
	path := filepath.Join(moduleRoot(t), "abi", "v1", "testdata", "presence.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Rows []PresenceRow `json:"rows"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return table.Rows
}

// moduleRoot is the directory of go.mod above the test's working
// directory (its package's).
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// embedImportOnlyWhenUsed: an SDK declaring the host's embed function adds
// no import to a module that never calls it (so it still loads on a host
// older than ABI minor 5); the probe, which calls it, imports it.
func embedImportOnlyWhenUsed(t *testing.T, p Probe) {
	for path, want := range map[string]bool{p.Path: true, p.NoEmbed: false} {
		if got := ImportsEmbed(t, path); got != want {
			t.Errorf("%s imports %s: %t, want %t", filepath.Base(path), abi.HostEmbed, got, want)
		}
	}
}

// ImportsEmbed says whether the Wasm module at path imports the host's
// embed function.
func ImportsEmbed(t testing.TB, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.CompileModule(ctx, b)
	if err != nil {
		t.Fatalf("compiling %s: %v", path, err)
	}
	for _, f := range mod.ImportedFunctions() {
		if m, name, _ := f.Import(); m == abi.HostNamespace && name == abi.HostEmbed {
			return true
		}
	}
	return false
}

type conformanceReport struct {
	Results []struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"results"`
}

// conformance: the probe passes the conformance kit (`anvil-host plugin
// test`), whose scripted judge embeds: generated cases (a conversation
// among them), each required field missing, determinism, unknown fields,
// the pool, and the judge capability and budgets around embed. When the
// probe has kinds that break the ABI on purpose, the kit's exit code says
// nothing: its JSON report is read for the conforming kinds.
func conformance(t *testing.T, p Probe) {
	code, report := runKit(t, p.Path)
	if p.Conforming == nil {
		if code != 0 {
			for _, r := range report.Results {
				if r.Status == "FAIL" {
					t.Errorf("%s: %s", r.Name, r.Message)
				}
			}
			t.Fatalf("plugin test %s: exit %d", p.Path, code)
		}
		return
	}
	checked := map[string]int{}
	for _, r := range report.Results {
		kind, _, _ := strings.Cut(strings.TrimPrefix(r.Name, "metric/"), "/")
		if !strings.HasPrefix(r.Name, "metric/") || !slices.Contains(p.Conforming, kind) {
			continue
		}
		if r.Status == "FAIL" {
			t.Errorf("%s: %s", r.Name, r.Message)
		}
		if r.Status == "PASS" {
			checked[kind]++
		}
	}
	// all-fields, golden-request, missing-fields, unicode, large-input,
	// determinism, unknown-fields, concurrency at least.
	for _, kind := range p.Conforming {
		if checked[kind] < 8 {
			t.Errorf("passed checks per kind %v; want the kit's case checks run on %s", checked, kind)
		}
	}
}

// runKit runs `plugin test --json` through host.Main, which prints to
// os.Stdout: it is swapped for a file while the kit runs.
func runKit(t *testing.T, path string) (int, conformanceReport) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = f
	code := host.Main([]string{"plugin", "test", path, "--json"})
	os.Stdout = stdout
	f.Close()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	var r conformanceReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("plugin test --json: %v\n%s", err, b)
	}
	return code, r
}

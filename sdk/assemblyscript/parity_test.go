package assemblyscript_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
)

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

// judged evaluates one probe kind with a judge configured (and granted
// when grant), unlike run, whose config has none.
func judged(t *testing.T, kind string, grant bool, embeddingModel string, judge *judgetest.Server, cases ...abi.TestCase) map[string]host.MetricResult {
	t.Helper()
	wasm := probe(t)
	dir := t.TempDir()
	model := ""
	if embeddingModel != "" {
		model = ", embedding_model: " + embeddingModel
	}
	cfg := fmt.Sprintf(`version: 1
judges:
  default: {base_url: %q, model: m%s, api_key_env: PROBE_KEY}
plugins:
  probe-as: {path: %s, sha256_file: %s.sha256, grants: {judge: %t}}
metrics:
  - name: m
    kind: %s
    threshold: 0.5
`, judge.URL(), model, wasm, wasm, grant, kind)
	if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := host.LoadConfig(filepath.Join(dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := host.Evaluate(context.Background(), c, cases, host.Options{
		Cache:     "off",
		StorePath: filepath.Join(dir, "store.db"),
		Getenv:    func(k string) string { return map[string]string{"PROBE_KEY": "k"}[k] },
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]host.MetricResult{}
	for _, cr := range res.Cases {
		out[cr.CaseID] = cr.Metrics[0]
	}
	if len(out) != len(cases) {
		t.Fatalf("%d results for %d cases", len(out), len(cases))
	}
	return out
}

var embedCases = []abi.TestCase{
	{ID: "near", ActualOutput: "Paris.", ExpectedOutput: "Paris"},
	{ID: "opposite", ActualOutput: "hot", ExpectedOutput: "cold"},
	{ID: "same", ActualOutput: "12", ExpectedOutput: "12"},
}

// TestEmbed: embed() through anvil_embed and the judge layer to the fake
// judge's embeddings endpoint: the scores are the cosines of the vectors
// the judge gave each text, and each case is one embeddings call.
func TestEmbed(t *testing.T) {
	judge := embedJudge(t)
	got := judged(t, "cosine", true, "emb", judge, embedCases...)
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
}

// TestEmbedRefused: the host's refusals come back from embed() as the
// result's error with the host's code, which the probe propagates:
// capability_denied without the judge grant, invalid_config naming
// embedding_model when the judge has none. Neither reaches the judge.
func TestEmbedRefused(t *testing.T) {
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
			m := judged(t, "cosine", tc.grant, tc.model, judge, embedCases[0])["near"]
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
// tools only, retrieval context on a turn, non-ASCII and escaped content.
var conversation = abi.TestCase{
	ID:          "conv",
	Scenario:    "a customer asks where an order is",
	ChatbotRole: "a courteous support agent",
	Turns: []abi.Turn{
		{Role: abi.RoleSystem, Content: "Be brief."},
		{Role: abi.RoleUser, Content: "Where is order o-1? 📦"},
		{Role: abi.RoleAssistant, ToolsCalled: []abi.ToolCall{{Name: "lookup_order", Arguments: json.RawMessage(`{"id":"o-1"}`)}},
			RetrievalContext: []string{"o-1 shipped on Monday"}},
		{Role: abi.RoleAssistant, Content: "It shipped on Monday <b>&</b>."},
		{Role: abi.RoleUser, Content: "Thanks \"ü\" \u2028\u2029 \x01\x1f\b\f\t\\"},
		{Role: abi.RoleAssistant, Content: "You're welcome."},
	},
}

// TestTurns: TestCase.turns, lastTurn and the derived and conversational
// fields; render("turns") is the host's own rendering (abi.TurnsText),
// byte for byte, so a prompt over turns is the same in every language;
// a single-turn case, or one with no user turn, is missing_field naming
// the field the probe requires.
func TestTurns(t *testing.T) {
	got := judged(t, "turns", false, "", embedJudge(t), conversation,
		abi.TestCase{ID: "single", Input: "q", ActualOutput: "a"},
		abi.TestCase{ID: "no-user", Turns: []abi.Turn{{Role: abi.RoleAssistant, Content: "Hello?"}}})
	m := got["conv"]
	if m.Error != nil || m.Score == nil || *m.Score != 0.5 || m.Reason != "3 of 6 turns are the assistant's" {
		t.Fatalf("conv: score %v reason %q error %v; want 0.5", m.Score, m.Reason, m.Error)
	}
	rendered, _ := abi.TurnsText(conversation.Turns)
	var d, want any
	json.Unmarshal(m.Details, &d)
	wantJSON, _ := json.Marshal(map[string]any{
		"roles":               []string{"system", "user", "assistant", "assistant", "user", "assistant"},
		"last_user_turn":      "Thanks \"ü\" \u2028\u2029 \x01\x1f\b\f\t\\",
		"last_assistant_turn": "You're welcome.",
		"tools":               []string{"lookup_order"},
		"retrieval_context":   []string{"o-1 shipped on Monday"},
		"scenario":            "a customer asks where an order is",
		"chatbot_role":        "a courteous support agent",
		"rendered":            rendered,
		"conversational":      true,
	})
	json.Unmarshal(wantJSON, &want)
	if !reflect.DeepEqual(d, want) {
		t.Errorf("conv: details %s\nwant %s", m.Details, wantJSON)
	}
	for id, field := range map[string]string{"single": abi.FieldTurns, "no-user": abi.FieldLastUserTurn} {
		if m := got[id]; m.Error == nil || m.Error.Code != abi.CodeMissingField || m.Error.Field != field {
			t.Errorf("%s: error %+v; want missing_field %s", id, m.Error, field)
		}
	}
}

// TestEmbedImportOnlyWhenUsed: asc imports anvil_embed only into a module
// that calls embed(), so one that does not still loads on a host older
// than ABI minor 5.
func TestEmbedImportOnlyWhenUsed(t *testing.T) {
	probe(t)
	for path, want := range map[string]bool{probePath: true, noembed: false} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rt := wazero.NewRuntime(context.Background())
		mod, err := rt.CompileModule(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, f := range mod.ImportedFunctions() {
			m, name, _ := f.Import()
			got = got || (m == abi.HostNamespace && name == abi.HostEmbed)
		}
		rt.Close(context.Background())
		if got != want {
			t.Errorf("%s imports %s: %t, want %t", filepath.Base(path), abi.HostEmbed, got, want)
		}
	}
}

// TestEmbedResultChecked: EmbedResult.fromJSON on the answers a real host
// never sends — a wrong count, ragged, empty or non-numeric vectors — is
// an abi_violation saying what is wrong, with no vectors; the host's
// error keeps its code; a good answer's vectors and usage are read.
func TestEmbedResultChecked(t *testing.T) {
	for _, tc := range []struct {
		name, result string
		n            int
		want         string // details
	}{
		{"ok", `{"vectors":[[1,-0.5],[0,2e3]],"usage":{"calls":1}}`, 2, `{"vectors":[[1,-0.5],[0,2000]],"calls":1}`},
		{"host error", `{"vectors":[],"usage":{},"error":{"code":"budget_exhausted","message":"no budget"}}`, 2,
			`{"error":"budget_exhausted: no budget","vectors":[],"calls":0}`},
		{"too few", `{"vectors":[[1]],"usage":{}}`, 2, `{"error":"abi_violation: the host answered 1 vectors for 2 texts","vectors":[],"calls":0}`},
		{"too many", `{"vectors":[[1],[2],[3]],"usage":{}}`, 2, `{"error":"abi_violation: the host answered 3 vectors for 2 texts","vectors":[],"calls":0}`},
		{"no vectors", `{"usage":{}}`, 1, `{"error":"abi_violation: the host answered no vectors for 1 texts","vectors":[],"calls":0}`},
		{"ragged", `{"vectors":[[1,2],[3]]}`, 2, `{"error":"abi_violation: vectors[1] has 1 numbers, vectors[0] 2","vectors":[],"calls":0}`},
		{"longer", `{"vectors":[[1],[2,3]]}`, 2, `{"error":"abi_violation: vectors[1] has 2 numbers, vectors[0] 1","vectors":[],"calls":0}`},
		{"empty", `{"vectors":[[]]}`, 1, `{"error":"abi_violation: vectors[0] is not a non-empty array of numbers","vectors":[],"calls":0}`},
		{"not a number", `{"vectors":[[1,"2"]]}`, 1, `{"error":"abi_violation: vectors[0][1] is not a number","vectors":[],"calls":0}`},
		{"error not an object", `{"vectors":[],"error":"no"}`, 1, `{"error":"abi_violation: embed result: error is not an object","vectors":[],"calls":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := json.Marshal(map[string]any{"result": tc.result, "n": tc.n})
			m, _ := run(t, "decode_embed", string(cfg), abi.TestCase{ID: "c", ActualOutput: "x"})
			r := m["c"]
			var got, want any
			json.Unmarshal(r.Details, &got)
			json.Unmarshal([]byte(tc.want), &want)
			if r.Error != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("details %s error %v; want %s", r.Details, r.Error, tc.want)
			}
		})
	}
}

// TestConformance: the probe's embedding and conversation kinds pass the
// conformance kit (`anvil-host plugin test`), whose scripted judge
// embeds: generated cases (a conversation among them), each required
// field missing, determinism, unknown fields, the pool, and the judge
// capability and budgets around embed(). The probe's other kinds break
// the ABI on purpose (a trap, a score of 1.5), so the kit's exit code
// says nothing: its JSON report is read instead.
func TestConformance(t *testing.T) {
	wasm := probe(t)
	report := conformance(t, wasm)
	checked := map[string]int{}
	for _, r := range report.Results {
		kind, _, _ := strings.Cut(strings.TrimPrefix(r.Name, "metric/"), "/")
		if !strings.HasPrefix(r.Name, "metric/") || (kind != "cosine" && kind != "turns") {
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
	if checked["cosine"] < 8 || checked["turns"] < 8 {
		t.Errorf("passed checks per kind %v; want the kit's case checks run on both", checked)
	}
}

type conformanceReport struct {
	Results []struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"results"`
}

// conformance runs `plugin test --json` through host.Main, which prints
// to os.Stdout: the test swaps it for a file while the kit runs.
func conformance(t *testing.T, path string) conformanceReport {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = f
	host.Main([]string{"plugin", "test", path, "--json"})
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
	return r
}

// TestPresence: TestCase.has on context and retrieval_context follows the
// presence table the host is held to (abi/v1/testdata/presence.json),
// through the real host: a list of only white-space strings is absent,
// white space being exactly Go's unicode.IsSpace, not String#trim's set
// (which has U+FEFF and lacks U+0085). The probe's kind requires neither
// field, so the host passes every row to it.
func TestPresence(t *testing.T) {
	b, err := os.ReadFile("../../abi/v1/testdata/presence.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Rows []struct {
			Name    string   `json:"name"`
			Items   []string `json:"items"`
			Present bool     `json:"present"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	var cases []abi.TestCase
	type want struct {
		row                       string
		context, retrievalContext bool
	}
	wants := map[string]want{}
	for i, row := range table.Rows {
		c := abi.TestCase{ID: fmt.Sprintf("%d-context", i), ActualOutput: "x", Context: row.Items}
		r := abi.TestCase{ID: fmt.Sprintf("%d-retrieval", i), ActualOutput: "x", RetrievalContext: row.Items}
		cases = append(cases, c, r)
		wants[c.ID] = want{row.Name + " in context", row.Present, false}
		wants[r.ID] = want{row.Name + " in retrieval_context", false, row.Present}
	}
	got, _ := run(t, "presence", "{}", cases...)
	if len(got) != len(cases) {
		t.Fatalf("%d results for %d cases", len(got), len(cases))
	}
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

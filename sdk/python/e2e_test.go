package pythonsdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
)

func TestMain(m *testing.M) {
	host.MaybeRunTrampoline() // this binary is the sandbox trampoline of the plugin it starts
	code := m.Run()
	if probeBuild.dir != "" {
		os.RemoveAll(probeBuild.dir)
	}
	os.Exit(code)
}

var probeBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// probe packs testdata/probe (probe.py and this SDK) into a zipapp once,
// with the SDK's own packer, and returns its path.
func probe(t *testing.T) string {
	t.Helper()
	py := python(t)
	probeBuild.once.Do(func() {
		probeBuild.dir, probeBuild.err = os.MkdirTemp("", "probe-py-")
		if probeBuild.err != nil {
			return
		}
		probeBuild.path = filepath.Join(probeBuild.dir, "probe-py.pyz")
		cmd := exec.Command(py, "-B", "-m", "anvil_sdk.pack", "testdata/probe", "--plugin", "probe:plugin", "--python", py, "-o", probeBuild.path)
		cmd.Env = append(os.Environ(), "PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeBuild.err = fmt.Errorf("anvil_sdk.pack: %v\n%s", err, out)
		}
	})
	if probeBuild.err != nil {
		t.Fatal(probeBuild.err)
	}
	return probeBuild.path
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

// evaluate runs one probe kind through the real host (a sandboxed process
// plugin) against judge, and returns each case's result.
func evaluate(t *testing.T, kind string, grant bool, embeddingModel string, judge *judgetest.Server, cases ...abi.TestCase) map[string]host.MetricResult {
	t.Helper()
	bin := probe(t)
	dir := t.TempDir()
	model := ""
	if embeddingModel != "" {
		model = ", embedding_model: " + embeddingModel
	}
	cfg := fmt.Sprintf(`version: 1
judges:
  default: {base_url: %q, model: m%s, api_key_env: PROBE_KEY}
plugins:
  probe-py: {transport: process, path: %s, sha256_file: %s.sha256, grants: {judge: %t}, limits: {timeout: 20s}}
metrics:
  - name: m
    kind: %s
    threshold: 0.5
`, judge.URL(), model, bin, bin, grant, kind)
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

// TestEmbed: Host.embed through the host's Host/Embed callback and the
// judge layer to the fake judge's embeddings endpoint: the scores are the
// cosines of the vectors the judge gave each text, and each case is one
// embeddings call.
func TestEmbed(t *testing.T) {
	judge := embedJudge(t)
	got := evaluate(t, "cosine", true, "emb", judge, embedCases...)
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

// TestEmbedRefused: the host's refusals reach the kind as AnvilError with
// the host's code, which the result keeps: capability_denied without the
// judge grant, invalid_config naming embedding_model when the judge has
// none. Neither reaches the judge.
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
			m := evaluate(t, "cosine", tc.grant, tc.model, judge, embedCases[0])["near"]
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
// tools only, retrieval context on a turn.
var conversation = abi.TestCase{
	ID:          "conv",
	Scenario:    "a customer asks where an order is",
	ChatbotRole: "a courteous support agent",
	Turns: []abi.Turn{
		{Role: abi.RoleSystem, Content: "Be brief."},
		{Role: abi.RoleUser, Content: "Where is order o-1? 📦"},
		{Role: abi.RoleAssistant, ToolsCalled: []abi.ToolCall{{Name: "lookup_order", Arguments: json.RawMessage(`{"id":"o-1"}`)}},
			RetrievalContext: []string{"o-1 shipped on Monday"}},
		{Role: abi.RoleAssistant, Content: "It shipped on Monday."},
		{Role: abi.RoleUser, Content: "Thanks"},
		{Role: abi.RoleAssistant, Content: "You're welcome."},
	},
}

// TestTurns: a kind requiring turns and the derived last_user_turn reads
// a conversational case's turns, their tools and retrieval context, and
// the conversation's fields; a single-turn case, or one with no user
// turn, is missing_field naming the field.
func TestTurns(t *testing.T) {
	got := evaluate(t, "turns", false, "", embedJudge(t), conversation,
		abi.TestCase{ID: "single", Input: "q", ActualOutput: "a"},
		abi.TestCase{ID: "no-user", Turns: []abi.Turn{{Role: abi.RoleAssistant, Content: "Hello?"}}})
	m := got["conv"]
	if m.Error != nil || m.Score == nil || *m.Score != 0.5 || m.Reason != "3 of 6 turns are the assistant's" {
		t.Fatalf("conv: score %v reason %q error %v; want 0.5", m.Score, m.Reason, m.Error)
	}
	var d, want any
	json.Unmarshal(m.Details, &d)
	json.Unmarshal([]byte(`{"roles":["system","user","assistant","assistant","user","assistant"],`+
		`"last_user_turn":"Thanks","last_assistant_turn":"You're welcome.","tools":["lookup_order"],`+
		`"retrieval_context":["o-1 shipped on Monday"],"scenario":"a customer asks where an order is",`+
		`"chatbot_role":"a courteous support agent"}`), &want)
	if !reflect.DeepEqual(d, want) {
		t.Errorf("conv: details %s", m.Details)
	}
	for id, field := range map[string]string{"single": abi.FieldTurns, "no-user": abi.FieldLastUserTurn} {
		if m := got[id]; m.Error == nil || m.Error.Code != abi.CodeMissingField || m.Error.Field != field {
			t.Errorf("%s: error %+v; want missing_field %s", id, m.Error, field)
		}
	}
}

// TestConformance: the probe passes the conformance kit (`anvil-host
// plugin test`) as a sandboxed process plugin, whose scripted judge
// embeds: generated cases (a conversation among them), each required
// field missing, determinism, unknown fields, concurrency, a call cut
// short, and the judge capability and budgets around host.embed.
func TestConformance(t *testing.T) {
	bin := probe(t)
	if code := host.Main([]string{"plugin", "test", bin}); code != 0 {
		t.Fatalf("plugin test %s: exit %d", bin, code)
	}
}

// TestPresence: anvil_sdk.has on context and retrieval_context, through
// the real host and the process wire, follows the presence table the host
// is held to (abi/v1/testdata/presence.json): a list of only white-space
// strings is absent, white space being exactly Go's unicode.IsSpace, not
// str.isspace (which takes U+001C–U+001F). The probe's kind requires
// neither field, so the host passes every row to it.
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
	type want struct {
		row                       string
		context, retrievalContext bool
	}
	var cases []abi.TestCase
	wants := map[string]want{}
	for i, row := range table.Rows {
		c := abi.TestCase{ID: fmt.Sprintf("%d-context", i), ActualOutput: "x", Context: row.Items}
		r := abi.TestCase{ID: fmt.Sprintf("%d-retrieval", i), ActualOutput: "x", RetrievalContext: row.Items}
		cases = append(cases, c, r)
		wants[c.ID] = want{row.Name + " in context", row.Present, false}
		wants[r.ID] = want{row.Name + " in retrieval_context", false, row.Present}
	}
	got := evaluate(t, "presence", false, "", embedJudge(t), cases...)
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

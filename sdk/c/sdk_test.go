// Tests of the C SDK's ABI minor 4 and 5 helpers through the real host: a
// probe plugin (testdata/probe.c) built from source with clang against
// anvil.h, loaded by host.Evaluate, its embeddings answered by the fake
// judge. Skipped, saying what to install, without a wasm32-wasi C
// toolchain (scripts/ci-deps-c installs it).
package csdk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"unicode/utf16"

	"github.com/tetratelabs/wazero"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host"
	"github.com/agentanvil/anvil/host/judgetest"
)

var built struct {
	once sync.Once
	dir  string
	skip string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// build compiles src (a path under testdata) into a reactor module, as
// the header's BUILD section says, and writes its .sha256 beside it.
func build(t *testing.T, src string) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "csdk-")
		if built.err != nil {
			return
		}
		if _, err := exec.LookPath("clang"); err != nil {
			built.skip = "clang not found; scripts/ci-deps-c installs clang, lld, wasi-libc and libclang-rt-dev-wasm32"
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	if built.skip != "" {
		t.Skip(built.skip)
	}
	out := filepath.Join(built.dir, strings.TrimSuffix(filepath.Base(src), ".c")+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-std=c11",
		"-Wall", "-Wextra", "-Werror", "-Wl,--strip-all", "-I", ".", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(b), "wasi") && (strings.Contains(string(b), "not found") || strings.Contains(string(b), "cannot find")) {
			t.Skipf("clang cannot build a wasm32-wasi reactor (%s); scripts/ci-deps-c installs clang, lld, wasi-libc and libclang-rt-dev-wasm32", bytes.TrimSpace(b))
		}
		t.Fatalf("clang %s: %v\n%s", src, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if err := os.WriteFile(out+".sha256", []byte("sha256:"+hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
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

// evaluate runs one probe kind through the real host against judge.
func evaluate(t *testing.T, kind string, grant bool, embeddingModel string, judge *judgetest.Server, cases ...abi.TestCase) map[string]host.MetricResult {
	t.Helper()
	wasm := build(t, "testdata/probe.c")
	dir := t.TempDir()
	model := ""
	if embeddingModel != "" {
		model = ", embedding_model: " + embeddingModel
	}
	cfg := fmt.Sprintf(`version: 1
judges:
  default: {base_url: %q, model: m%s, api_key_env: PROBE_KEY}
plugins:
  probe-c: {path: %s, sha256_file: %s.sha256, grants: {judge: %t}}
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

// TestEmbed: anvil_embed through the host function and the judge layer to
// the fake judge's embeddings endpoint: the scores are the cosines of the
// vectors the judge gave each text, and each case is one embeddings call.
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
}

// TestEmbedRefused: the host's refusals come back from anvil_embed with
// the host's code, which the probe keeps in its result: capability_denied
// without the judge grant, invalid_config naming embedding_model when the
// judge has none. Neither reaches the judge.
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
// tools only, retrieval context on a turn, non-ASCII content.
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
		{Role: abi.RoleUser, Content: "Thanks \"ü\""},
		{Role: abi.RoleAssistant, Content: "You're welcome."},
	},
}

// TestTurns: anvil_turn_read and anvil_last_turn over a conversational
// case's turns, their tools and retrieval context, and the
// conversation's fields; the host answers a single-turn case, or one with
// no user turn, missing_field naming the field the probe requires.
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
		`"last_user_turn":"Thanks \"ü\"","last_assistant_turn":"You're welcome.","tools":["lookup_order"],`+
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

// TestEmbedImportOnlyWhenUsed: declaring anvil_embed in the header adds
// no import to a plugin that never calls it (so it still loads on a host
// older than ABI minor 5); the probe, which calls it, imports it.
func TestEmbedImportOnlyWhenUsed(t *testing.T) {
	for src, want := range map[string]bool{"testdata/probe.c": true, "testdata/noembed.c": false} {
		b, err := os.ReadFile(build(t, src))
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
			t.Errorf("%s imports %s: %t, want %t", src, abi.HostEmbed, got, want)
		}
	}
}

// TestNativeHelpers: anvil_embed's checks of the host's answer and the
// turn helpers, compiled for this machine (under AddressSanitizer and
// UBSan when clang has them) with the kernel stubbed, so the answers a
// real host never sends — a wrong count, ragged or non-numeric vectors,
// no answer — are fed to them; every kernel block must be freed. The
// output is compared with testdata/native.golden.
func TestNativeHelpers(t *testing.T) {
	bin := native(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("native: %v\n%s", err, stderr.Bytes())
	}
	want, err := os.ReadFile("testdata/native.golden")
	if err != nil {
		t.Fatal(err)
	}
	got, wantLines := strings.Split(stdout.String(), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(got), len(wantLines)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

// TestConformance: the probe passes the conformance kit (`anvil-host
// plugin test`), whose scripted judge embeds: every kind on generated
// cases, a conversation among them, the missing-field checks
// (anvil_case_missing), determinism, unknown fields, the pool, and the
// judge capability and budgets around anvil_embed.
func TestConformance(t *testing.T) {
	wasm := build(t, "testdata/probe.c")
	if code := host.Main([]string{"plugin", "test", wasm}); code != 0 {
		t.Fatalf("plugin test %s: exit %d", wasm, code)
	}
}

// native compiles testdata/native.c for this machine, under AddressSanitizer
// and UBSan when clang has them.
func native(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang not found; scripts/ci-deps-c installs it")
	}
	bin := filepath.Join(t.TempDir(), "native")
	args := []string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unknown-attributes", "-I", ".", "-o", bin, "testdata/native.c", "-lm"}
	if out, err := exec.Command("clang", append([]string{"-fsanitize=address,undefined", "-fno-sanitize-recover=all"}, args...)...).CombinedOutput(); err != nil {
		t.Logf("without sanitizers (%v: %s)", err, bytes.TrimSpace(out))
		if out, err := exec.Command("clang", args...).CombinedOutput(); err != nil {
			t.Fatalf("clang: %v\n%s", err, out)
		}
	}
	return bin
}

// TestNativePresence: anvil_case_has on context and retrieval_context
// follows the presence table the host is held to
// (abi/v1/testdata/presence.json): a list of only white-space strings is
// absent, white space being exactly Go's unicode.IsSpace (U+001C and
// U+FEFF are not; U+0085 and U+3000 are). Each row goes in as a case with
// the list in context, then one with it in retrieval_context, in JSON as
// encoding/json writes it, and once more with every character \u-escaped,
// as another writer may.
func TestNativePresence(t *testing.T) {
	bin := native(t)
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
	var in bytes.Buffer
	var want []string
	for _, row := range table.Rows {
		items, err := json.Marshal(row.Items)
		if err != nil {
			t.Fatal(err)
		}
		if row.Items == nil {
			items = []byte("[]")
		}
		p := map[bool]string{false: "0", true: "1"}[row.Present]
		for _, list := range [][]byte{items, escapeAll(row.Items)} {
			fmt.Fprintf(&in, "{\"id\":\"c\",\"context\":%s}\n{\"id\":\"c\",\"retrieval_context\":%s}\n", list, list)
			want = append(want, row.Name+": "+p+" 0", row.Name+": 0 "+p)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "presence")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("native presence: %v\n%s", err, stderr.Bytes())
	}
	got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d answers for %d cases:\n%s", len(got), len(want), stdout.Bytes())
	}
	for i, w := range want {
		name, has, _ := strings.Cut(w, ": ")
		if got[i] != has {
			form := map[bool]string{false: "escaped by encoding/json", true: "every character \\u-escaped"}[i%4 >= 2]
			field := map[bool]string{false: "context", true: "retrieval_context"}[i%2 == 1]
			t.Errorf("%s (%s, %s): context, retrieval_context present %s; want %s", name, field, form, got[i], has)
		}
	}
}

// escapeAll writes items as a JSON array with every character a \u
// escape (a surrogate pair beyond the BMP).
func escapeAll(items []string) []byte {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, u := range utf16.Encode([]rune(s)) {
			fmt.Fprintf(&b, "\\u%04x", u)
		}
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return []byte(b.String())
}

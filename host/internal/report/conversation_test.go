package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
)

// conversationFixture is one conversational case scored by one metric.
func conversationFixture(turns []abi.Turn) (*results.Summary, []results.CaseResult) {
	s := &results.Summary{ConfigHash: "sha256:c0", Cases: 1, Verdict: results.VerdictFailed,
		Metrics: []results.MetricSummary{{Metric: "retention", Kind: "knowledge_retention", Gated: true, Verdict: results.VerdictFailed,
			Threshold: 0.5, N: 1, Scored: 1, Failed: 1, Mean: ptr(0.0), P50: ptr(0.0), PassRate: ptr(0), FailedCases: []string{"chat-1"}}}}
	cases := []results.CaseResult{{CaseID: "chat-1", ConfigHash: "sha256:c0",
		Case: &abi.TestCase{ID: "chat-1", Turns: turns, Scenario: "An allergic user asks for a snack.",
			ChatbotRole: "A careful shop assistant.", Context: []string{"Peanut bars contain peanuts."}},
		Metrics: []results.MetricResult{{Metric: "retention", Kind: "knowledge_retention", Status: results.StatusFailed, Gated: true,
			Score: ptr(0.0), Threshold: 0.5, Reason: "0 of 1 assistant turns keep what the user said; not: turn 4: forgot the allergy."}}}}
	return s, cases
}

var chatTurns = []abi.Turn{
	{Role: abi.RoleSystem, Content: "You sell snacks."},
	{Role: abi.RoleUser, Content: "I'm allergic to peanuts. " + hostile},
	{Role: abi.RoleUser, Content: "Suggest a snack."},
	{Role: abi.RoleAssistant, Content: "Try a peanut bar!", ToolsCalled: []abi.ToolCall{{Name: "catalogue", Arguments: json.RawMessage(`{"q":"<bar>"}`)}},
		RetrievalContext: []string{"Peanut bar: 3 EUR."}},
}

// TestHTMLConversation: a conversational case is shown as its turns, in
// order and by role, with each turn's tools and retrieval, its last user
// and assistant turns in the head where a single-turn case shows input
// and output, and scenario and role among its fields; all escaped.
func TestHTMLConversation(t *testing.T) {
	s, cases := conversationFixture(chatTurns)
	var b bytes.Buffer
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`<b>last user turn</b>Suggest a snack.`,
		`<b>last assistant turn</b>Try a peanut bar!`,
		`<details class="conversation"><summary>conversation, 4 turns</summary><ol class="turns">`,
		`<li class="turn role-system" value="1"><span class="role">system</span><pre>You sell snacks.</pre></li>`,
		`<li class="turn role-user" value="2"><span class="role">user</span><pre>I&#39;m allergic to peanuts. &lt;script&gt;`,
		`<li class="turn role-assistant" value="4"><span class="role">assistant</span><pre>Try a peanut bar!</pre><details><summary>tools called</summary><pre>[` + "\n" + `  {` + "\n" + `    &#34;name&#34;: &#34;catalogue&#34;,`,
		`&#34;q&#34;: &#34;&lt;bar&gt;&#34;`,
		`<details><summary>retrieval context</summary><pre>[1] Peanut bar: 3 EUR.</pre></details></li>`,
		`<dt>scenario</dt><dd><pre>An allergic user asks for a snack.</pre></dd>`,
		`<dt>chatbot_role</dt><dd><pre>A careful shop assistant.</pre></dd>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(out, `<b>input</b>`) || strings.Contains(out, `alert("x")`) {
		t.Error("a conversational case shows an input, or unescaped text")
	}
	for _, tag := range []string{"details", "summary", "pre", "ol", "li", "dl"} {
		open := len(regexp.MustCompile(`<`+tag+`[\s>]`).FindAllStringIndex(out, -1))
		if closing := strings.Count(out, "</"+tag+">"); open != closing {
			t.Errorf("<%s>: %d opened, %d closed", tag, open, closing)
		}
	}
}

// TestWriteKeepsConversation: a case read back from cases/<id>.json keeps
// its turns and conversational fields (a long conversation its first and
// last 100 turns and a note between); junit.xml names it by its id.
func TestWriteKeepsConversation(t *testing.T) {
	long := []abi.Turn{}
	for i := range 250 {
		long = append(long, abi.Turn{Role: []string{abi.RoleUser, abi.RoleAssistant}[i%2], Content: fmt.Sprintf("turn text %d", i+1)})
	}
	s, cases := conversationFixture(long)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	full, _ := json.Marshal(cases[0])
	if err := os.WriteFile(filepath.Join(dir, "cases", "chat-1.json"), full, 0o644); err != nil {
		t.Fatal(err)
	}
	cases[0].Case = nil
	line, _ := json.Marshal(cases[0])
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"conversation, 201 turns", "<pre>turn text 100</pre>", "… 50 turns omitted from this report", "<pre>turn text 151</pre>",
		"<pre>turn text 250</pre>", "<b>last assistant turn</b>turn text 250", "<dt>scenario</dt>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(string(page), "<pre>turn text 101</pre>") {
		t.Error("report.html shows a turn it should have left out")
	}
	junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(junit), `<testcase name="chat-1" classname="anvil.retention"`) {
		t.Errorf("junit.xml does not name the case by its id:\n%s", junit)
	}
}

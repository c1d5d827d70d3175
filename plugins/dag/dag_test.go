package dag_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/dag"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

// answer is a judge that gives every request the reply js.
func answer(js string) *scripted.Host {
	return answering(abi.JudgeResponse{Content: js, JSON: json.RawMessage(js),
		Usage: abi.Usage{Model: "judge-1", InputTokens: 50, OutputTokens: 10, USD: 0.0005, CacheHit: true}})
}

// answering is a judge that gives every request resp.
func answering(resp abi.JudgeResponse) *scripted.Host {
	return &scripted.Host{Replies: []scripted.Reply{{Resp: resp}}}
}

func prompt(r abi.JudgeRequest) string { return scripted.Prompt(r) }

var testCase = abi.TestCase{ID: "c1", Input: "Summarise the memo.", ActualOutput: "The memo asks for 3 reviews."}

func run(h *scripted.Host, kind, cfg string, inputs []abi.NodeInput, verdicts []string) *abi.NodeResult {
	return dag.Plugin().Node(context.Background(), h, &abi.NodeRequest{
		Kind: kind, NodeID: "n1", Config: json.RawMessage(cfg), Inputs: inputs, Verdicts: verdicts, Case: testCase,
	})
}

// checkCall asserts the node made exactly one judge call with the given
// purpose at temperature 0, and returns it.
func checkCall(t *testing.T, h *scripted.Host, purpose string) abi.JudgeRequest {
	t.Helper()
	if len(h.Calls()) != 1 {
		t.Fatalf("%d judge calls, want 1", len(h.Calls()))
	}
	r := h.Calls()[0]
	if r.Purpose != purpose || r.Temperature == nil || *r.Temperature != 0 || r.Score != nil {
		t.Errorf("request purpose %q temperature %v score %+v", r.Purpose, r.Temperature, r.Score)
	}
	return r
}

func TestBinary(t *testing.T) {
	for _, tc := range []struct {
		reply, want string
	}{
		{`{"reason":"It does.","verdict":true}`, "true"},
		{`{"reason":"It does.","verdict":false}`, "false"},
	} {
		h := answer(tc.reply)
		res := run(h, "binary", `{"criteria":"Does the output mention a number?","params":["actual_output"]}`, nil, dag.BinaryVerdicts)
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		if res.Verdict != tc.want || res.Reason != "It does." || res.Output != "" {
			t.Errorf("%s: %+v", tc.reply, res)
		}
		r := checkCall(t, h, "binary")
		if !strings.Contains(string(r.Schema), `"verdict":{"type":"boolean"}`) || strings.Index(string(r.Schema), `"reason"`) > strings.Index(string(r.Schema), `"verdict"`) {
			t.Errorf("schema %s", r.Schema)
		}
		for _, want := range []string{"Criterion:\nDoes the output mention a number?", "Actual Output:\nThe memo asks for 3 reviews.\n", `"verdict", the boolean true`} {
			if !strings.Contains(prompt(r), want) {
				t.Errorf("prompt lacks %q:\n%s", want, prompt(r))
			}
		}
		var d dag.Details
		if err := json.Unmarshal(res.Details, &d); err != nil || d.Usage.InputTokens != 50 || !d.Usage.CacheHit || d.PromptVersion != dag.PromptVersion {
			t.Errorf("details %s", res.Details)
		}
	}
	// A reply without a boolean verdict is a judge fault.
	h := answer(`{"reason":"hm","verdict":"yes"}`)
	if res := run(h, "binary", `{"criteria":"c"}`, nil, dag.BinaryVerdicts); res.Error == nil || res.Error.Code != abi.CodeJudge || !strings.Contains(res.Error.Message, "n1") {
		t.Errorf("non-boolean verdict: %+v", res.Error)
	}
}

func TestChoice(t *testing.T) {
	verdicts := []string{"formal", "casual", "mixed"}
	cfg := `{"criteria":"What is the tone of the output?","params":["actual_output"]}`
	for _, tc := range []struct {
		name, reply string
		code        abi.Code
		want        string
	}{
		{"valid", `{"reason":"Plain words.","verdict":"casual"}`, "", "casual"},
		{"not allowed", `{"reason":"x","verdict":"angry"}`, abi.CodeMetric, ""},
		{"case differs", `{"reason":"x","verdict":"Formal"}`, abi.CodeMetric, ""},
		{"missing", `{"reason":"x"}`, abi.CodeJudge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := answer(tc.reply)
			res := run(h, "choice", cfg, nil, verdicts)
			r := checkCall(t, h, "choice")
			if !strings.Contains(string(r.Schema), `"verdict":{"type":"string","enum":["formal","casual","mixed"]}`) {
				t.Errorf("schema %s", r.Schema)
			}
			if !strings.Contains(prompt(r), `Allowed verdicts (copy one exactly): ["formal","casual","mixed"]`) {
				t.Errorf("prompt:\n%s", prompt(r))
			}
			if tc.code == "" {
				if res.Error != nil || res.Verdict != tc.want || res.Reason != "Plain words." {
					t.Errorf("result %+v", res)
				}
				return
			}
			if res.Error == nil || res.Error.Code != tc.code || !strings.Contains(res.Error.Message, "n1") {
				t.Fatalf("error %+v, want %s naming n1", res.Error, tc.code)
			}
			if tc.code == abi.CodeMetric && !strings.Contains(res.Error.Message, `["formal" "casual" "mixed"]`) {
				t.Errorf("error does not list the allowed verdicts: %s", res.Error.Message)
			}
		})
	}
	// A choice node without verdicts cannot run.
	h := answer(`{}`)
	if res := run(h, "choice", cfg, nil, nil); res.Error == nil || !strings.Contains(res.Error.Message, "n1") || len(h.Calls()) != 0 {
		t.Errorf("no verdicts: %+v, %d calls", res.Error, len(h.Calls()))
	}
}

func TestTask(t *testing.T) {
	h := answer(`{"output":"- reviews\n- deadline"}`)
	res := run(h, "task", `{"instructions":"List the requests in the memo.","output_label":"Requests","params":["input","actual_output"]}`, nil, nil)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if res.Output != "- reviews\n- deadline" || res.Reason != "" || res.Verdict != "" {
		t.Errorf("result %+v", res)
	}
	r := checkCall(t, h, "task")
	if string(r.Schema) != `{"type":"object","properties":{"output":{"type":"string"}},"required":["output"],"additionalProperties":false}` {
		t.Errorf("schema %s", r.Schema)
	}
	for _, want := range []string{"Instructions:\nList the requests in the memo.", `"output": your output (Requests) as a string`,
		"<<<BEGIN INPUT>>>\nInput:\nSummarise the memo.\n\nActual Output:\nThe memo asks for 3 reviews.\n<<<END INPUT>>>"} {
		if !strings.Contains(prompt(r), want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt(r))
		}
	}
}

// Parent outputs come first, under their labels and in the given order,
// then the selected fields under their titles.
func TestInputsRenderedUnderLabelsInOrder(t *testing.T) {
	inputs := []abi.NodeInput{
		{NodeID: "t2", Label: "Headings", Output: "Intro; Body"},
		{NodeID: "t1", Label: "Word Count", Output: "120"},
		{NodeID: "t3", Output: "unlabelled"},
	}
	for _, kind := range []string{"task", "binary", "choice"} {
		t.Run(kind, func(t *testing.T) {
			h := answer(`{"output":"o","reason":"r","verdict":true}`)
			cfg := `{"criteria":"c","params":["actual_output"]}`
			verdicts := dag.BinaryVerdicts
			if kind == "task" {
				cfg, verdicts = `{"instructions":"i","params":["actual_output"]}`, nil
			}
			if kind == "choice" {
				h = answer(`{"reason":"r","verdict":"a"}`)
				verdicts = []string{"a", "b"}
			}
			if res := run(h, kind, cfg, inputs, verdicts); res.Error != nil {
				t.Fatal(res.Error)
			}
			want := "<<<BEGIN INPUT>>>\nHeadings:\nIntro; Body\n\nWord Count:\n120\n\nt3:\nunlabelled\n\nActual Output:\nThe memo asks for 3 reviews.\n<<<END INPUT>>>"
			if p := prompt(h.Calls()[0]); !strings.Contains(p, want) {
				t.Errorf("prompt lacks\n%s\nin\n%s", want, p)
			}
		})
	}
}

func TestNodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, kind, cfg string
		h               *scripted.Host
		code            abi.Code
		field           string
	}{
		{"missing field", "binary", `{"criteria":"c","params":["expected_output"]}`, answer(`{}`), abi.CodeMissingField, "expected_output"},
		{"empty criteria", "binary", `{"criteria":"  "}`, answer(`{}`), abi.CodeInvalidConfig, "criteria"},
		{"no instructions", "task", `{}`, answer(`{}`), abi.CodeInvalidConfig, "instructions"},
		{"duplicate param", "choice", `{"criteria":"c","params":["input","input"]}`, answer(`{}`), abi.CodeInvalidConfig, "params"},
		{"unknown field", "task", `{"instructions":"i","model":"x"}`, answer(`{}`), abi.CodeInvalidConfig, "model"},
		{"judge error", "task", `{"instructions":"i"}`, answering(abi.JudgeResponse{Error: &abi.Error{Code: abi.CodeJudge, Message: "refused", Retryable: true}}), abi.CodeJudge, ""},
		{"budget", "binary", `{"criteria":"c"}`, answering(abi.JudgeResponse{Error: abi.Errorf(abi.CodeBudget, "spent")}), abi.CodeBudget, ""},
		{"capability denied", "choice", `{"criteria":"c"}`, &scripted.Host{Replies: []scripted.Reply{{Err: abi.Errorf(abi.CodeCapability, "judge not granted")}}}, abi.CodeCapability, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verdicts := []string{"a", "b"}
			if tc.kind == "task" {
				verdicts = nil
			}
			res := run(tc.h, tc.kind, tc.cfg, nil, verdicts)
			if res.Error == nil || res.Error.Code != tc.code || res.Error.Field != tc.field {
				t.Errorf("error %+v, want %s field %q", res.Error, tc.code, tc.field)
			}
			wantCalls := 1
			if tc.code == abi.CodeMissingField || tc.code == abi.CodeInvalidConfig {
				wantCalls = 0
			}
			if len(tc.h.Calls()) != wantCalls {
				t.Errorf("%d judge calls, want %d", len(tc.h.Calls()), wantCalls)
			}
		})
	}
}

func TestDescriptor(t *testing.T) {
	d := dag.Plugin().Describe()
	if d.Name != "dag" || !d.Asks(abi.CapJudge) {
		t.Fatalf("descriptor %+v", d)
	}
	for _, tc := range []struct {
		kind     string
		required string
		verdicts []string
	}{
		{"task", "instructions", nil},
		{"binary", "criteria", []string{"false", "true"}},
		{"choice", "criteria", nil},
	} {
		k, ok := d.Kind(tc.kind)
		if !ok || k.Role != abi.RoleNode || !slices.Equal(k.Verdicts, tc.verdicts) {
			t.Errorf("kind %s: %+v", tc.kind, k)
		}
		var s struct {
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(k.ConfigSchema, &s); err != nil || !slices.Equal(s.Required, []string{tc.required}) {
			t.Errorf("kind %s schema %s", tc.kind, k.ConfigSchema)
		}
	}
}

// Every node kind lays its prompt out static-first: the system message
// (the instructions and the reply's shape) is the same whatever the case,
// and the user message holds the case's input and none of the
// instructions, so a provider's prefix cache serves them.
func TestPromptsAreStaticFirst(t *testing.T) {
	nodes := []struct{ kind, cfg, instruction string }{
		{"task", `{"instructions":"List the numbers.","params":["actual_output"]}`, "List the numbers."},
		{"binary", `{"criteria":"Does it mention a number?","params":["actual_output"]}`, "Does it mention a number?"},
		{"choice", `{"criteria":"How many numbers?","params":["actual_output"]}`, "How many numbers?"},
	}
	cases := []abi.TestCase{testCase, {ID: "c2", Input: "Other.", ActualOutput: "Nothing here."}}
	for _, n := range nodes {
		var systems []string
		for _, c := range cases {
			h := answer(`{"reason":"r","verdict":"one","output":"o"}`)
			dag.Plugin().Node(context.Background(), h, &abi.NodeRequest{Kind: n.kind, NodeID: "n1", Config: json.RawMessage(n.cfg),
				Verdicts: []string{"one", "two"}, Case: c})
			if len(h.Calls()) != 1 || len(h.Calls()[0].Messages) != 2 {
				t.Fatalf("%s: calls %+v", n.kind, h.Calls())
			}
			sys, user := h.Calls()[0].Messages[0], h.Calls()[0].Messages[1]
			if sys.Role != "system" || !strings.Contains(sys.Content, n.instruction) || !strings.Contains(sys.Content, "Example JSON") {
				t.Errorf("%s: system message %q lacks the instructions", n.kind, sys.Content)
			}
			if strings.Contains(user.Content, n.instruction) || strings.Contains(user.Content, "Example JSON") || !strings.Contains(user.Content, c.ActualOutput) {
				t.Errorf("%s: user message %q: want the case's input alone", n.kind, user.Content)
			}
			systems = append(systems, sys.Content)
		}
		if systems[0] != systems[1] {
			t.Errorf("%s: the system message differs between cases", n.kind)
		}
	}
}

// TestNodesReadTurns: a node's params may name a conversation's turns
// (the transcript as JSON), its last user or assistant turn, or its
// scenario; a single-turn case lacking them is missing_field.
func TestNodesReadTurns(t *testing.T) {
	conv := abi.TestCase{ID: "chat", Scenario: "A refund request.", Turns: []abi.Turn{
		{Role: abi.RoleUser, Content: "Refund my order."},
		{Role: abi.RoleAssistant, Content: "Done: refund R-1 is open."},
		{Role: abi.RoleUser, Content: "Thanks!"},
	}}
	h := answer(`{"reason":"It does.","verdict":true}`)
	res := dag.Plugin().Node(context.Background(), h, &abi.NodeRequest{Kind: "binary", NodeID: "n1", Verdicts: dag.BinaryVerdicts, Case: conv,
		Config: json.RawMessage(`{"criteria":"Did the assistant open a refund?","params":["scenario","turns","last_assistant_turn","last_user_turn"]}`)})
	if res.Error != nil || res.Verdict != "true" {
		t.Fatalf("%+v", res)
	}
	p := prompt(checkCall(t, h, "binary"))
	for _, want := range []string{
		"Scenario:\nA refund request.\n",
		`Turns:` + "\n" + `[{"role":"user","content":"Refund my order."},{"role":"assistant","content":"Done: refund R-1 is open."},{"role":"user","content":"Thanks!"}]` + "\n",
		"Last Assistant Turn:\nDone: refund R-1 is open.\n",
		"Last User Turn:\nThanks!\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	h = answer(`{"reason":"x","verdict":true}`)
	res = run(h, "binary", `{"criteria":"c","params":["last_assistant_turn"]}`, nil, dag.BinaryVerdicts)
	if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != abi.FieldLastAssistantTurn || len(h.Calls()) != 0 {
		t.Errorf("single-turn case: %+v, %d calls", res.Error, len(h.Calls()))
	}
}

package geval_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/geval"
)

// chat is a conversational case: a support exchange with a tool call.
func chat() abi.TestCase {
	return abi.TestCase{
		ID: "chat-1",
		Turns: []abi.Turn{
			{Role: abi.RoleUser, Content: "My order o-1 has not arrived."},
			{Role: abi.RoleAssistant, Content: "It ships tomorrow.", ToolsCalled: []abi.ToolCall{{Name: "track", Arguments: json.RawMessage(`{"order":"o-1"}`)}}},
			{Role: abi.RoleUser, Content: "Thanks."},
		},
		Scenario:        "A customer asks where an order is.",
		ExpectedOutcome: "The customer learns when the order ships.",
	}
}

const chatTurns = `[{"role":"user","content":"My order o-1 has not arrived."},{"role":"assistant","content":"It ships tomorrow.","tools_called":[{"name":"track","arguments":{"order":"o-1"}}]},{"role":"user","content":"Thanks."}]`

func convPrep(h *scripter, cfg string) *abi.PrepareResult {
	return geval.Plugin().Prepare(ctx, h, &abi.PrepareRequest{Kind: geval.ConversationalKindName, Metric: "m", Config: json.RawMessage(cfg), JudgeModel: "judge-1"})
}

func convMeas(h *scripter, cfg string, prepared json.RawMessage, c abi.TestCase) *abi.MeasureResult {
	return geval.Plugin().Measure(ctx, h, &abi.MeasureRequest{Kind: geval.ConversationalKindName, Metric: "m", Config: json.RawMessage(cfg),
		Prepared: prepared, Threshold: 0.5, JudgeModel: "judge-1", Case: c})
}

// TestConversationalGEval: steps generated once from the criteria with a
// prompt that says the case is a conversation; one scoring call per case
// showing the turns as §8.1 renders them, weighted by logprobs and
// normalised as geval's (7.5 on 0-10 is 0.75).
func TestConversationalGEval(t *testing.T) {
	cfg := `{"name":"Helpfulness","criteria":"The assistant resolves the user's problem.","evaluation_params":["scenario","turns"]}`
	h := &scripter{Replies: []reply{
		stepsReply(false, "Read the scenario.", "Check each assistant turn answers the user."),
		scoreReply("It told the user when the order ships.", 8, weighted(7.5,
			abi.ScoreCandidate{Value: 7, Probability: 0.5}, abi.ScoreCandidate{Value: 8, Probability: 0.5}), chatTurns),
	}}
	pr := convPrep(h, cfg)
	if pr.Error != nil {
		t.Fatalf("prepare: %v", pr.Error)
	}
	steps := prompt(h.Calls()[0])
	for _, want := range []string{"Scenario and Turns", "The test case is a conversation between a user and an assistant", "The assistant resolves the user's problem."} {
		if !strings.Contains(steps, want) {
			t.Errorf("steps prompt lacks %q:\n%s", want, steps)
		}
	}
	res := convMeas(h, cfg, pr.State, chat())
	if res.Error != nil {
		t.Fatalf("measure: %v", res.Error)
	}
	if got := h.Purposes(); !slices.Equal(got, []string{"steps", "score"}) {
		t.Fatalf("judge calls %v, want one steps and one score call", got)
	}
	sc := h.Calls()[1]
	p := prompt(sc)
	for _, want := range []string{
		"The test case is a conversation",
		"Scenario:\nA customer asks where an order is.\n\nTurns:\n" + chatTurns + "\n<<<END TEST CASE>>>",
		"1. Read the scenario.\n2. Check each assistant turn answers the user.",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("scoring prompt lacks %q:\n%s", want, p)
		}
	}
	if sc.Score == nil || sc.Score.Min != 0 || sc.Score.Max != 10 || sc.TopLogprobs != geval.DefaultTopLogprobs || !sc.OmitTokens {
		t.Errorf("scoring request does not ask for logprob weighting: score %+v top %d omit %v", sc.Score, sc.TopLogprobs, sc.OmitTokens)
	}
	if res.Score == nil || !near(*res.Score, 0.75) || !res.Success || res.ScoreMode != abi.ScoreWeighted {
		t.Errorf("result %+v score %v; want 0.75 weighted, passing", res, res.Score)
	}
	if d := details(t, res); d.RawScore != 8 || !near(d.WeightedScore, 7.5) || d.StepsSource != geval.StepsGenerated {
		t.Errorf("details %+v", d)
	}
}

// TestConversationalGEvalDefaultsAndStrict: evaluation_params defaults to
// [turns]; strict mode scores the judge's 0 or 1 with threshold 1, as
// geval's; the steps request is the same in every run (so the host's
// judge cache serves it).
func TestConversationalGEvalDefaultsAndStrict(t *testing.T) {
	cfg := `{"evaluation_steps":["The assistant never invents an order status."],"strict_mode":true}`
	h := &scripter{Replies: []reply{strictReply("It checked with the tracker.", 1)}}
	pr := convPrep(h, cfg)
	if pr.Error != nil || len(h.Calls()) != 0 {
		t.Fatalf("prepare with given steps: %v, %d calls", pr.Error, len(h.Calls()))
	}
	res := convMeas(h, cfg, pr.State, chat())
	if res.Error != nil || res.Score == nil || *res.Score != 1 || res.Threshold != 1 || res.ScoreMode != abi.ScoreRaw {
		t.Fatalf("strict result %+v", res)
	}
	p := prompt(h.Calls()[0])
	if !strings.Contains(p, "Turns:\n"+chatTurns+"\n") || strings.Contains(p, "Scenario:") {
		t.Errorf("default evaluation_params should show the turns only:\n%s", p)
	}

	crit := `{"criteria":"Polite."}`
	var first []abi.Message
	for range 2 {
		h := &scripter{Replies: []reply{stepsReply(false, "s")}}
		if pr := convPrep(h, crit); pr.Error != nil {
			t.Fatal(pr.Error)
		}
		if first == nil {
			first = h.Calls()[0].Messages
		} else if !reflect.DeepEqual(first, h.Calls()[0].Messages) {
			t.Error("steps prompt differs between runs")
		}
	}
}

// TestConversationalGEvalRefuses: configs that could never score a
// conversational case are invalid_config naming evaluation_params; a case
// without turns is missing_field turns, with no judge call.
func TestConversationalGEvalRefuses(t *testing.T) {
	for _, tt := range []struct{ cfg, want string }{
		{`{"criteria":"c","evaluation_params":["input","turns"]}`, "input is a single-turn field"},
		{`{"criteria":"c","evaluation_params":["scenario"]}`, "must include turns"},
		{`{"evaluation_params":["turns"]}`, "criteria or evaluation_steps"},
	} {
		h := &scripter{}
		res := convMeas(h, tt.cfg, nil, chat())
		if res.Error == nil || res.Error.Code != abi.CodeInvalidConfig || !strings.Contains(res.Error.Message, tt.want) {
			t.Errorf("%s: error %+v, want invalid_config %q", tt.cfg, res.Error, tt.want)
		}
		if pr := convPrep(h, tt.cfg); pr.Error == nil || pr.Error.Code != abi.CodeInvalidConfig {
			t.Errorf("%s: prepare error %+v, want invalid_config", tt.cfg, pr.Error)
		}
		if len(h.Calls()) != 0 {
			t.Errorf("%s: %d judge calls", tt.cfg, len(h.Calls()))
		}
	}
	h := &scripter{}
	single := cases(1)[0]
	res := convMeas(h, `{"evaluation_steps":["s"]}`, nil, single)
	if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != abi.FieldTurns || len(h.Calls()) != 0 {
		t.Errorf("single-turn case: %+v, %d calls; want missing_field turns and no call", res.Error, len(h.Calls()))
	}
}

// TestGEvalPromptsWithoutTurnsUnchanged: geval's prompts say nothing of
// conversations unless its evaluation_params show turns.
func TestGEvalPromptsWithoutTurnsUnchanged(t *testing.T) {
	h := &scripter{Replies: []reply{stepsReply(false, "s"), scoreReply("ok", 5, weighted(5))}}
	pr := prep(t, h, criteriaCfg)
	meas(t, h, criteriaCfg, pr.State, 0.5, cases(1)[0])
	for _, c := range h.Calls() {
		if strings.Contains(prompt(c), "conversation") {
			t.Errorf("%s prompt mentions a conversation:\n%s", c.Purpose, prompt(c))
		}
	}
}

// TestConversationalDescriptor: the plugin offers both kinds; the
// conversational one's schema leaves evaluation_params optional.
func TestConversationalDescriptor(t *testing.T) {
	d := geval.Plugin().Describe()
	k, ok := d.Kind(geval.ConversationalKindName)
	if !ok || k.Role != abi.RoleMetric || !k.Prepare {
		t.Fatalf("kind %+v", k)
	}
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(k.ConfigSchema, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Required) != 0 {
		t.Errorf("required %v, want none", s.Required)
	}
}

package conversation_test

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/conversation"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

var ctx = context.Background()

func turns(spec ...string) []abi.Turn {
	var ts []abi.Turn
	for _, s := range spec {
		role, content, _ := strings.Cut(s, ": ")
		ts = append(ts, abi.Turn{Role: role, Content: content})
	}
	return ts
}

func measure(h *scripter, kind, cfg string, c abi.TestCase) *abi.MeasureResult {
	if cfg == "" {
		cfg = "{}"
	}
	return conversation.Plugin().Measure(ctx, h, &abi.MeasureRequest{Kind: kind, Metric: "m", Config: json.RawMessage(cfg), Threshold: 0.5, Case: c})
}

func details(t *testing.T, res *abi.MeasureResult) conversation.Details {
	return scripted.Details[conversation.Details](t, res)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func wantScore(t *testing.T, res *abi.MeasureResult, score float64, success bool) {
	t.Helper()
	if res.Error != nil || res.Score == nil || !near(*res.Score, score) || res.Success != success {
		t.Fatalf("result %+v (score %v); want score %v success %v", res, res.Score, score, success)
	}
}

// A shop conversation: the user gives facts in turns 1 and 5; the
// assistant keeps them in turn 2, forgets the allergy in turn 4 and asks
// again for the order number in turn 6.
var shop = turns(
	"user: I'm Ann and I'm allergic to peanuts.",
	"assistant: Hi Ann, how can I help?",
	"user: Suggest a snack.",
	"assistant: Try our peanut butter bar!",
	"user: Also, my order o-5521 is late.",
	"assistant: What is your order number?",
)

// TestKnowledgeRetention: facts extracted per user turn in one batch,
// one verdict per assistant turn that follows facts, in a second batch,
// each against every fact given before it; "yes" (attrition) fails.
// Score = no / verdicts = 1 / 3.
func TestKnowledgeRetention(t *testing.T) {
	h := &scripter{Replies: []reply{
		answer("knowledge", `{"facts":{"Name":"Ann","Allergies":["peanuts"]}}`, "<<<BEGIN USER MESSAGE>>>\nI'm Ann"),
		answer("knowledge", `{"facts":{}}`, "<<<BEGIN USER MESSAGE>>>\nSuggest"),
		answer("knowledge", `{"facts": {"Order number": "o-5521"}}`, "o-5521 is late"),
		verdict("retention", "no", "Uses the name.", "Hi Ann"),
		verdict("retention", "yes", "Suggests peanuts to a peanut-allergic user.", "peanut butter bar"),
		verdict("retention", "yes", "Asks again for the order number.", `[{"Name":"Ann","Allergies":["peanuts"]},{"Order number":"o-5521"}]`, "What is your order number?"),
	}}
	res := measure(h, conversation.KindKnowledgeRetention, "", abi.TestCase{ID: "c", Turns: shop})
	wantScore(t, res, 1.0/3, false)
	if got := h.Shape(); got != "knowledge,knowledge,knowledge|retention,retention,retention" {
		t.Errorf("batches %s", got)
	}
	d := details(t, res)
	if len(d.Knowledge) != 2 || d.Knowledge[0].Turn != 1 || string(d.Knowledge[1].Facts) != `{"Order number":"o-5521"}` {
		t.Errorf("knowledge %+v", d.Knowledge)
	}
	var turnsJudged []int
	for _, v := range d.Verdicts {
		turnsJudged = append(turnsJudged, v.Turn)
	}
	if !reflect.DeepEqual(turnsJudged, []int{2, 4, 6}) || d.Passed != 1 || d.Total != 3 || d.Formula != "no attrition / verdicts = 1 / 3 = 0.333" {
		t.Errorf("verdicts on turns %v, %d/%d, formula %q", turnsJudged, d.Passed, d.Total, d.Formula)
	}
	if d.Usage.Calls != 6 {
		t.Errorf("usage %+v, want 6 calls", d.Usage)
	}
	want := "1 of 3 assistant turns keep what the user said; not: turn 4: Suggests peanuts to a peanut-allergic user.; turn 6: Asks again for the order number.."
	if res.Reason != want {
		t.Errorf("reason\n%q\nwant\n%q", res.Reason, want)
	}
	// The second turn is judged against the first user turn's facts only.
	for _, r := range h.Batches()[1] {
		if strings.Contains(prompt(r), "Hi Ann") && strings.Contains(prompt(r), "o-5521") {
			t.Errorf("turn 2 judged against a fact given after it:\n%s", prompt(r))
		}
	}

	strict := measure(h, conversation.KindKnowledgeRetention, `{"strict_mode":true}`, abi.TestCase{ID: "c", Turns: shop})
	if wantScore(t, strict, 0, false); strict.Threshold != 1 {
		t.Errorf("strict threshold %v", strict.Threshold)
	}
}

// TestKnowledgeRetentionNothingToForget: no facts before any assistant
// turn scores 1 (DeepEval: 0), with no verdict call.
func TestKnowledgeRetentionNothingToForget(t *testing.T) {
	h := &scripter{Replies: []reply{answer("knowledge", `{"facts":{}}`)}}
	res := measure(h, conversation.KindKnowledgeRetention, "", abi.TestCase{ID: "c", Turns: turns("user: hello", "assistant: Hi!")})
	wantScore(t, res, 1, true)
	if h.Shape() != "knowledge" || !strings.Contains(res.Reason, "nothing to forget") {
		t.Errorf("batches %s, reason %q", h.Shape(), res.Reason)
	}
	for _, bad := range []string{`{"facts":[]}`, `{"facts":{"Age":3}}`, `not json`} {
		h := &scripter{Replies: []reply{answer("knowledge", bad)}}
		res := measure(h, conversation.KindKnowledgeRetention, "", abi.TestCase{ID: "c", Turns: shop})
		if res.Error == nil || res.Error.Code != abi.CodeJudge || !strings.Contains(res.Error.Message, "turn 1") {
			t.Errorf("facts reply %s: error %+v, want judge_error naming turn 1", bad, res.Error)
		}
	}
}

var roleplay = abi.TestCase{ID: "r", ChatbotRole: "A formal bank clerk.", Turns: turns(
	"system: Be formal.",
	"user: Good morning.",
	"assistant: Good morning. How may I assist you?",
	"user: I owe a lot.",
	"assistant: lol, sucks to be you",
	"user: Please help.",
	"assistant: Certainly. Let us review a repayment plan.",
)}

// TestRoleAdherence: one call lists the assistant turns out of character.
// Score = (assistant turns − out of character) / assistant turns = 2 / 3.
func TestRoleAdherence(t *testing.T) {
	h := &scripter{Replies: []reply{answer("out_of_character", `{"out_of_character":[{"turn":5,"reason":"Mocks the customer."},{"turn":5,"reason":"again"}]}`, "A formal bank clerk.", "5. {\"role\":\"assistant\",\"content\":\"lol, sucks to be you\"}")}}
	res := measure(h, conversation.KindRoleAdherence, "", roleplay)
	wantScore(t, res, 2.0/3, true)
	d := details(t, res)
	if h.Shape() != "out_of_character" || d.Total != 3 || d.Passed != 2 || d.Verdicts[1].Turn != 5 || d.Verdicts[1].Verdict != "out_of_character" {
		t.Errorf("batches %s details %+v", h.Shape(), d)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "turn 5 out of character twice") || len(h.Logs()) != 1 {
		t.Errorf("warnings %v logs %v", d.Warnings, h.Logs())
	}
	if want := "2 of 3 assistant turns keep the role; not: turn 5: Mocks the customer.."; res.Reason != want {
		t.Errorf("reason %q, want %q", res.Reason, want)
	}
	// A listed turn that is not the assistant's is the judge's slip: not
	// counted, with a warning.
	for content, want := range map[string]string{
		`{"out_of_character":[{"turn":2,"reason":"x"}]}`: "turn 2 out of character, which is a user turn",
		`{"out_of_character":[{"turn":8,"reason":"x"}]}`: "turns 1 to 7",
	} {
		h := &scripter{Replies: []reply{answer("out_of_character", content)}}
		res := measure(h, conversation.KindRoleAdherence, "", roleplay)
		wantScore(t, res, 1, true)
		if d := details(t, res); len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], want) {
			t.Errorf("%s: warnings %v, want %q", content, d.Warnings, want)
		}
	}
	h = &scripter{Replies: []reply{answer("out_of_character", `{"verdicts":[]}`)}}
	if res := measure(h, conversation.KindRoleAdherence, "", roleplay); res.Error == nil || res.Error.Code != abi.CodeJudge || !strings.Contains(res.Error.Message, `"out_of_character" list`) {
		t.Errorf("reply without the list: %+v", res.Error)
	}
	h = &scripter{}
	res = measure(h, conversation.KindRoleAdherence, "", abi.TestCase{ID: "r", ChatbotRole: "x", Turns: turns("user: hi")})
	if wantScore(t, res, 1, true); len(h.Batches()) != 0 {
		t.Errorf("%d batches for a conversation without assistant turns", len(h.Batches()))
	}
	res = measure(h, conversation.KindRoleAdherence, "", abi.TestCase{ID: "r", Turns: roleplay.Turns})
	if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != abi.FieldChatbotRole {
		t.Errorf("no chatbot_role: %+v", res.Error)
	}
}

// TestConversationCompleteness: intentions extracted in one call, one
// verdict per intention in one batch. Score = met / intentions = 1 / 2.
func TestConversationCompleteness(t *testing.T) {
	c := abi.TestCase{ID: "c", Turns: turns("user: Refund my headphones, and when does the money arrive?", "assistant: Refund R-1 is open.")}
	h := &scripter{Replies: []reply{
		answer("intentions", `{"intentions":["The user wants a refund.","  ","The user wants to know when the money arrives."]}`),
		verdict("completeness", "yes", "Refund opened.", "<<<BEGIN INTENTION>>>\nThe user wants a refund."),
		verdict("completeness", "no", "The timing was never given.", "money arrives"),
	}}
	res := measure(h, conversation.KindConversationCompleteness, "", c)
	wantScore(t, res, 0.5, true)
	d := details(t, res)
	if h.Shape() != "intentions|completeness,completeness" || len(d.Intentions) != 2 || d.Formula != "met / intentions = 1 / 2 = 0.500" {
		t.Errorf("batches %s details %+v", h.Shape(), d)
	}
	if want := "1 of 2 user intentions met; not: «The user wants to know when the money arrives.»: The timing was never given.."; res.Reason != want {
		t.Errorf("reason %q, want %q", res.Reason, want)
	}
	h = &scripter{Replies: []reply{answer("intentions", `{"intentions":["x"]}`), verdict("completeness", "maybe", "")}}
	if res := measure(h, conversation.KindConversationCompleteness, "", c); res.Error == nil || !strings.Contains(res.Error.Message, `"maybe", not "yes" or "no"`) {
		t.Errorf("verdict maybe: %+v", res.Error)
	}
	h = &scripter{Replies: []reply{answer("intentions", `{"intentions":[]}`)}}
	wantScore(t, measure(h, conversation.KindConversationCompleteness, "", c), 1, true)
	if h.Shape() != "intentions" {
		t.Errorf("no intentions: batches %s", h.Shape())
	}
	budget := abi.Errorf(abi.CodeBudget, "judge budget spent")
	h = &scripter{Replies: []reply{fails("intentions", budget)}}
	if res := measure(h, conversation.KindConversationCompleteness, "", c); res.Error == nil || res.Error.Code != abi.CodeBudget {
		t.Errorf("budget fault became %+v", res.Error)
	}
}

// TestTurnRelevancy: one verdict per interaction, each seeing the last
// `window` interactions. Score = relevant / windows = 2 / 3.
func TestTurnRelevancy(t *testing.T) {
	c := abi.TestCase{ID: "t", Turns: turns(
		"user: Weather in Oslo?", "assistant: Rainy, 8°C.",
		"user: And tomorrow?", "assistant: Our shop sells umbrellas.",
		"user: Thanks.", "assistant: You're welcome.",
	)}
	script := []reply{
		verdict("relevancy", "no", "Answers with an advert.", `"Our shop sells umbrellas."}]`),
		verdict("relevancy", "yes", "Fine."),
	}
	h := &scripter{Replies: script}
	res := measure(h, conversation.KindTurnRelevancy, `{"window":2}`, c)
	wantScore(t, res, 2.0/3, true)
	d := details(t, res)
	if h.Shape() != "relevancy,relevancy,relevancy" || d.Window != 2 || d.Verdicts[1].Turn != 4 || d.Verdicts[1].Pass {
		t.Errorf("batches %s details %+v", h.Shape(), d)
	}
	third := prompt(h.Batches()[0][2])
	if strings.Contains(third, "Oslo") || !strings.Contains(third, "And tomorrow?") || !strings.Contains(third, "You're welcome.") {
		t.Errorf("window 2: the third verdict should see interactions 2 and 3 only:\n%s", third)
	}
	h = &scripter{Replies: script}
	measure(h, conversation.KindTurnRelevancy, "", c)
	if third := prompt(h.Batches()[0][2]); !strings.Contains(third, "Oslo") {
		t.Errorf("default window 10: the third verdict should see the whole conversation:\n%s", third)
	}
	if res := measure(&scripter{}, conversation.KindTurnRelevancy, `{"window":-1}`, c); res.Error == nil || res.Error.Code != abi.CodeInvalidConfig || res.Error.Field != "window" {
		t.Errorf("window -1: %+v", res.Error)
	}
}

// TestInteractions: the split DeepEval's get_unit_interactions makes.
func TestInteractions(t *testing.T) {
	for _, tt := range []struct {
		name  string
		turns []abi.Turn
		want  [][2]int
	}{
		{"pairs", turns("user: a", "assistant: b", "user: c", "assistant: d"), [][2]int{{0, 2}, {2, 4}}},
		{"system first joins the first", turns("system: s", "user: a", "assistant: b"), [][2]int{{0, 3}}},
		{"several user and assistant turns", turns("user: a", "user: b", "assistant: c", "assistant: d", "user: e"), [][2]int{{0, 4}}},
		{"assistant first joins the first", turns("assistant: hi", "user: a", "assistant: b"), [][2]int{{0, 3}}},
		{"tool turn between keeps one", turns("user: a", "assistant: b", "tool: t", "user: c", "assistant: d"), [][2]int{{0, 5}}},
		{"no user", turns("assistant: a", "assistant: b"), nil},
		{"unanswered user", turns("user: a"), nil},
		{"empty", nil, nil},
	} {
		if got := conversation.Interactions(tt.turns); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestDescriptor: four metric kinds asking for the judge, each needing
// turns (role_adherence chatbot_role too).
func TestDescriptor(t *testing.T) {
	d := conversation.Plugin().Describe()
	if d.Name != "conversation" || !d.Asks(abi.CapJudge) || len(d.Kinds) != 4 {
		t.Fatalf("descriptor %+v", d)
	}
	for _, k := range d.Kinds {
		if k.Role != abi.RoleMetric || len(k.RequiredFields) == 0 || k.RequiredFields[0] != abi.FieldTurns {
			t.Errorf("kind %+v", k)
		}
	}
}

// TestPromptsAreStaticFirst: every request's system message (the
// instructions and the reply's shape) is the same whatever the case, and
// its user message holds the case's text and none of the instructions, so
// a provider's prefix cache serves them.
func TestPromptsAreStaticFirst(t *testing.T) {
	scriptFor := func() *scripter {
		return &scripter{Replies: []reply{
			answer("knowledge", `{"facts":{"a":"b"}}`),
			answer("out_of_character", `{"out_of_character":[]}`),
			answer("intentions", `{"intentions":["The user wants x."]}`),
			verdict("retention", "no", "r"), verdict("completeness", "yes", "r"), verdict("relevancy", "yes", "r"),
		}}
	}
	chats := []abi.TestCase{
		{ID: "a", ChatbotRole: "A clerk.", Turns: turns("user: Hello there, I am Ann.", "assistant: Hi Ann.")},
		{ID: "b", ChatbotRole: "A pirate.", Turns: turns("user: Ahoy, I am Bob.", "assistant: Arr Bob.")},
	}
	systems := map[string]string{}
	for _, c := range chats {
		for _, k := range []string{conversation.KindKnowledgeRetention, conversation.KindRoleAdherence, conversation.KindConversationCompleteness, conversation.KindTurnRelevancy} {
			h := scriptFor()
			if res := measure(h, k, "", c); res.Error != nil {
				t.Fatalf("%s: %v", k, res.Error)
			}
			for _, b := range h.Batches() {
				for _, r := range b {
					if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[1].Role != "user" {
						t.Fatalf("%s: messages %+v", r.Purpose, r.Messages)
					}
					sys, user := r.Messages[0].Content, r.Messages[1].Content
					if strings.Contains(sys, c.Turns[0].Content) || strings.Contains(user, "Return only a JSON object") {
						t.Errorf("%s: case text in the system message or instructions in the user message:\n%s\n---\n%s", r.Purpose, sys, user)
					}
					if prev, ok := systems[r.Purpose]; ok && prev != sys {
						t.Errorf("%s: the system message differs between cases", r.Purpose)
					}
					systems[r.Purpose] = sys
				}
			}
		}
	}
	if len(systems) != 6 {
		t.Errorf("saw purposes %v, want all six", systems)
	}
}

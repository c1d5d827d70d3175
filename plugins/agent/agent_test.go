package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/agent"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

var ctx = context.Background()

var agentCase = abi.TestCase{ID: "a1", Input: "Book a table for two in Lyon on Friday at 8pm.",
	ActualOutput: "Your table for two at Café Bleu in Lyon is booked for Friday at 8pm.",
	ToolsCalled: []abi.ToolCall{
		{Name: "search_restaurants", Arguments: json.RawMessage(`{"city":"Lyon"}`), Output: json.RawMessage(`["Café Bleu"]`)},
		{Name: "book_table", Arguments: json.RawMessage(`{"restaurant":"Café Bleu","people":4,"time":"Friday 20:00"}`), Output: json.RawMessage(`"ok"`)},
		{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
	}}

func meas(h *scripted.Host, kind, cfg string, c abi.TestCase) *abi.MeasureResult {
	return agent.Plugin().Measure(ctx, h, &abi.MeasureRequest{Kind: kind, Metric: "m", Config: json.RawMessage(cfg),
		Threshold: 0.5, JudgeModel: "judge-1", Case: c})
}

func details(t *testing.T, res *abi.MeasureResult) agent.Details {
	return scripted.Details[agent.Details](t, res)
}

// Golden scores computed by hand from each formula.
func TestArgumentCorrectness(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		verdicts  []string
		score     float64
		formula   string
		reason    string
	}{
		// One wrong argument set of three: (3 − 1) / 3.
		{"one wrong", `{}`, []string{"yes", "no:people is 4; the input asks for two.", "yes"}, 2.0 / 3,
			"(calls − no) / calls = (3 − 1) / 3 = 0.6667",
			`The arguments of 1 of 3 tool calls do not address the input: [2] "book_table({\"restaurant\":\"Café Bleu\",\"people\":4,\"time\":\"Friday 20:00\"}) → \"ok\"" (no: people is 4; the input asks for two.).`},
		{"all right", `{}`, []string{"yes", "yes", "yes"}, 1, "(calls − no) / calls = (3 − 0) / 3 = 1", "The arguments of all 3 tool calls address the input."},
		{"two wrong, strict", `{"strict_mode":true}`, []string{"yes", "no:x", "no:y"}, 0,
			"(calls − no) / calls = (3 − 2) / 3 = 0.3333; strict_mode: 1 only if the score is 1 → 0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripted.Host{Replies: []scripted.Reply{scripted.JSON("verdicts", scripted.Verdicts(tc.verdicts...))}}
			res := meas(h, agent.KindArgumentCorrectness, tc.cfg, agentCase)
			d := details(t, res)
			if res.Score == nil || *res.Score != tc.score || d.Formula != tc.formula || (tc.reason != "" && res.Reason != tc.reason) {
				t.Errorf("score %v formula %q reason\n%s", *res.Score, d.Formula, res.Reason)
			}
			if len(h.Calls()) != 1 || d.Usage.Calls != 1 || h.Calls()[0].SchemaName != "agent_argument_verdicts" ||
				!strings.Contains(string(h.Calls()[0].Schema), `"minItems":3,"maxItems":3`) {
				t.Errorf("calls %d schema %s %s", len(h.Calls()), h.Calls()[0].SchemaName, h.Calls()[0].Schema)
			}
			p := scripted.Prompt(h.Calls()[0])
			for _, want := range []string{"<<<BEGIN INPUT>>>\nBook a table", `1. search_restaurants({"city":"Lyon"}) → ["Café Bleu"]`, `3. get_weather({"city":"Paris"})` + "\n<<<END TOOL CALLS>>>", "exactly 3 objects"} {
				if !strings.Contains(p, want) {
					t.Errorf("prompt lacks %q:\n%s", want, p)
				}
			}
		})
	}
}

func TestArgumentCorrectnessRepairAndFields(t *testing.T) {
	h := &scripted.Host{Replies: []scripted.Reply{
		scripted.JSON("verdicts", scripted.Verdicts("yes", "no:x")),
		scripted.Repair("verdicts", scripted.Verdicts("yes", "no:x", "yes"), "2 verdicts for 3 tool calls"),
	}}
	d := details(t, meas(h, agent.KindArgumentCorrectness, `{}`, agentCase))
	if !d.Repaired || d.RepairCause != "2 verdicts for 3 tool calls" || d.Usage.Calls != 2 {
		t.Errorf("details = %+v", d)
	}
	// No tool call: the case is skipped for the metric, not passed.
	c := agentCase
	c.ToolsCalled = nil
	h = &scripted.Host{}
	res := meas(h, agent.KindArgumentCorrectness, `{}`, c)
	if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != abi.FieldToolsCalled || len(h.Calls()) != 0 {
		t.Errorf("no tool calls: %+v", res.Error)
	}
}

func taskReply(task, outcome string, score any, reason string) scripted.Reply {
	return scripted.JSON("task", map[string]any{"task": task, "outcome": outcome, "score": score, "reason": reason})
}

func TestTaskCompletion(t *testing.T) {
	h := &scripted.Host{Replies: []scripted.Reply{taskReply("Book a table for two in Lyon on Friday at 8pm.",
		"A table for four was booked at Café Bleu in Lyon for Friday at 8pm.", 0.5, "The booking is for four, not two.")}}
	res := meas(h, agent.KindTaskCompletion, `{}`, agentCase)
	d := details(t, res)
	if *res.Score != 0.5 || d.TaskFrom != "judge" || d.Task != "Book a table for two in Lyon on Friday at 8pm." || *d.Judged != 0.5 || d.Formula != "the judge's score = 0.5" ||
		res.Reason != "Task: Book a table for two in Lyon on Friday at 8pm. Outcome: A table for four was booked at Café Bleu in Lyon for Friday at 8pm. Score 0.5: The booking is for four, not two." {
		t.Errorf("score %v details %+v reason %q", *res.Score, d, res.Reason)
	}
	c := h.Calls()[0]
	p := scripted.Prompt(c)
	if c.Purpose != "task" || c.SchemaName != "agent_task" || !strings.Contains(string(c.Schema), `"minimum":0,"maximum":1`) ||
		!strings.Contains(p, "2. book_table(") || !strings.Contains(p, "<<<BEGIN OUTPUT>>>\n"+agentCase.ActualOutput) || strings.Contains(p, "<<<BEGIN TASK>>>") {
		t.Errorf("request %s %s:\n%s", c.SchemaName, c.Schema, p)
	}

	// A configured task is given to the judge and kept whatever it echoes;
	// a case without tool calls is judged on its output.
	noTools := agentCase
	noTools.ToolsCalled = nil
	h = &scripted.Host{Replies: []scripted.Reply{taskReply("something else", "Nothing was booked.", 0, "No booking.")}}
	res = meas(h, agent.KindTaskCompletion, `{"task":"Book restaurant tables.","strict_mode":true}`, noTools)
	d = details(t, res)
	p = scripted.Prompt(h.Calls()[0])
	if *res.Score != 0 || res.Threshold != 1 || d.TaskFrom != "config" || d.Task != "Book restaurant tables." ||
		!strings.Contains(p, "<<<BEGIN TASK>>>\nBook restaurant tables.") || strings.Contains(p, "TOOL CALLS") {
		t.Errorf("configured task: score %v details %+v\n%s", *res.Score, d, p)
	}

	// A score outside [0, 1] is repaired, never clamped.
	h = &scripted.Host{Replies: []scripted.Reply{taskReply("t", "o", 8, "r"), scripted.Repair("task", map[string]any{"task": "t", "outcome": "o", "score": 0.8, "reason": "r"}, "score 8 is outside [0, 1]")}}
	res = meas(h, agent.KindTaskCompletion, `{"strict_mode":true}`, agentCase)
	d = details(t, res)
	if *res.Score != 0 || *d.Judged != 0.8 || !d.Repaired || !slices.Equal(h.Purposes(), []string{"task", "task"}) ||
		d.Formula != "the judge's score = 0.8; strict_mode: 1 only if the score is 1 → 0" {
		t.Errorf("repair: score %v details %+v", *res.Score, d)
	}
}

func TestDescriptor(t *testing.T) {
	d := agent.Plugin().Describe()
	if d.Name != "agent" || !d.Asks(abi.CapJudge) || len(d.Kinds) != 2 {
		t.Fatalf("descriptor %+v", d)
	}
	if k, _ := d.Kind(agent.KindArgumentCorrectness); !slices.Equal(k.RequiredFields, []string{"input", "tools_called"}) {
		t.Errorf("argument_correctness fields %v", k.RequiredFields)
	}
	if k, _ := d.Kind(agent.KindTaskCompletion); !slices.Equal(k.RequiredFields, []string{"input", "actual_output"}) {
		t.Errorf("task_completion fields %v", k.RequiredFields)
	}
}

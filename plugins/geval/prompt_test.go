package geval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// oldScoreMessages and oldRenderFields are the scoring prompt's builder
// written plainly, one string at a time, laid out static-first (v2: the
// instructions in the system message, the case alone in the user
// message): the prompt is part of every judge cache key and of the fake
// judge's scores, so the builder that renders its constant parts once
// must give the very same bytes.
func oldScoreMessages(s *setup, steps []string, c *abi.TestCase) []abi.Message {
	params := s.cfg.EvaluationParams
	p := paramsText(params)
	var b strings.Builder

	b.WriteString(systemPrompt + "\n\n")
	b.WriteString("You are an evaluator. Score the test case in the user's message by following the evaluation steps, one by one. ")
	fmt.Fprintf(&b, "Judge only the fields shown (%s).\n", p)
	if name := strings.TrimSpace(s.cfg.Name); name != "" {
		fmt.Fprintf(&b, "\nMetric: %s\n", name)
	}
	if d := strings.TrimSpace(s.cfg.Description); d != "" {
		fmt.Fprintf(&b, "Description: %s\n", d)
	}
	if s.criteria != "" {
		b.WriteString("\nEvaluation criteria:\n")
		b.WriteString(s.criteria)
		b.WriteString("\n")
	}

	b.WriteString("\nEvaluation steps:\n")
	for i, st := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, st)
	}

	if len(s.bands) > 0 {
		b.WriteString("\nRubric (score band: expected outcome):\n")
		for _, band := range s.bands {
			fmt.Fprintf(&b, "%s: %s\n", rangeText(band), band.Expected)
		}
		b.WriteString("First pick the band whose expected outcome best fits the test case, then the score inside that band.\n")
	}

	b.WriteString("\nScore:\n")
	if s.strict {
		b.WriteString("STRICTLY either 1 or 0: 1 when the test case follows the evaluation steps completely, 0 when it does not.\n")
	} else {
		fmt.Fprintf(&b, "An integer from %d to %d, where %d means the test case fully meets the evaluation steps and %d means it does not meet them at all.\n", s.min, s.max, s.max, s.min)
	}

	lo, hi := s.min, s.max
	b.WriteString("\n")
	if s.reason {
		b.WriteString("Return only a JSON object with exactly two keys, in this order:\n")
		fmt.Fprintf(&b, `1. "reason": a concise explanation of the score that cites specific details of the %s. Do not state the score, or any number standing for it, in the reason.`+"\n", p)
		fmt.Fprintf(&b, `2. "score": the integer score (%s).`+"\n", scoreWords(s))
		b.WriteString(ReasonFirstInstruction + " No other text.\n")
		b.WriteString("Example JSON:\n")
		fmt.Fprintf(&b, `{"reason": "<your concise reason>", "score": <integer from %d to %d>}`, lo, hi)
	} else {
		fmt.Fprintf(&b, `Return only a JSON object with one key, "score": the integer score (%s). No other text.`+"\n", scoreWords(s))
		b.WriteString("Example JSON:\n")
		fmt.Fprintf(&b, `{"score": <integer from %d to %d>}`, lo, hi)
	}
	system := b.String()

	b.Reset()
	b.WriteString("Test case:\n<<<BEGIN TEST CASE>>>\n")
	b.WriteString(oldRenderFields(c, params))
	b.WriteString("<<<END TEST CASE>>>\n")
	b.WriteString("\nScore this test case as the instructions above say, and return only the JSON object.")
	return []abi.Message{
		{Role: "system", Content: system},
		{Role: "user", Content: b.String()},
	}
}

func oldRenderFields(c *abi.TestCase, params []string) string {
	var b strings.Builder
	for i, p := range params {
		if i > 0 {
			b.WriteString("\n")
		}
		text, _ := c.Field(p)
		b.WriteString(abi.FieldTitle(p))
		b.WriteString(":\n")
		b.WriteString(text)
		b.WriteString("\n")
	}
	return b.String()
}

var promptConfigs = []string{
	`{"criteria":"The answer is correct and concise.","evaluation_params":["input","actual_output"]}`,
	`{"name":" Correctness ","description":"Is it right?","criteria":"  Correct. ","evaluation_params":["input","actual_output","expected_output"],"reason":false}`,
	`{"evaluation_steps":["One.","Two."],"evaluation_params":["actual_output"],"strict_mode":true}`,
	`{"name":"Helpfulness","evaluation_steps":[" a "],"evaluation_params":["input","context","retrieval_context","tools_called","expected_tools","my_field"],"rubric":[{"score_range":[0,3],"expected_outcome":"Bad."},{"score_range":[4,4],"expected_outcome":"Meh."},{"score_range":[6,10],"expected_outcome":"Good."}]}`,
	`{"criteria":"c","evaluation_params":["input","a","b","c","d","e","f","g","h","i"],"score_range":[1,5],"top_logprobs":0,"samples":3}`,
}

var promptCases = []abi.TestCase{
	{ID: "a", Input: "What is the capital of France?", ActualOutput: "Paris.", ExpectedOutput: "Paris"},
	{ID: "b"},
	{ID: "c", Input: "x\n\ny", Context: []string{"one", "two"}, RetrievalContext: []string{"r"},
		ToolsCalled:   []abi.ToolCall{{Name: "search", Arguments: json.RawMessage(`{"q": 1}`), Output: json.RawMessage(`"ok"`)}},
		ExpectedTools: []abi.ToolCall{{Name: "search"}},
		Extra:         map[string]json.RawMessage{"my_field": json.RawMessage(`"free"`), "a": json.RawMessage(`[1, 2]`), "g": json.RawMessage(`null`)}},
}

// pinnedDigests are sha256 prefixes of the prompts of promptConfigs and
// promptCases, taken with the old builder, so that a change to both
// builders is noticed too.
var pinnedDigests = []string{
	"b3273e82bb395d54", "25a7e4955156f30b", "1f82a4e78a8cf381",
	"2ac540e9f1cf8812", "85e9ad952b2f48fc", "8e5e0076cbdb7266",
	"4b9144404487f504", "e08a5ca973835e9f", "e08a5ca973835e9f",
	"6856960585adde7f", "7a7841f3cc99d785", "356dc9cc394acbc2",
	"b0928d51bd58fafd", "51fdf59b21e36b9d", "4b2cef5f08168472",
}

func setupOf(t testing.TB, cfgJSON string) *setup {
	t.Helper()
	var cfg Config
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		t.Fatal(err)
	}
	s, err := resolve(&cfg)
	if err != nil {
		t.Fatalf("%s: %v", cfgJSON, err)
	}
	return s
}

func promptDigest(ms []abi.Message) string {
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.Role + "\x00" + m.Content + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// TestScorePromptUnchanged: the plan's scoring prompt is byte for byte
// the old builder's, for every config and case above.
func TestScorePromptUnchanged(t *testing.T) {
	steps := []string{"Read the input.", "Compare: 100% <b>&</b> \u2028 \"quoted\".", ""}
	for _, cfg := range promptConfigs {
		s := setupOf(t, cfg)
		sp := newScorePrompt(s, steps)
		for _, c := range promptCases {
			got, want := sp.messages(s.cfg.EvaluationParams, &c), oldScoreMessages(s, steps, &c)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("config %s, case %s:\n got %q\nwant %q", cfg, c.ID, got, want)
			}
		}
	}
}

// TestScorePromptPinned pins the prompts' digests, whichever builder.
func TestScorePromptPinned(t *testing.T) {
	var got []string
	steps := []string{"Read the input.", "Decide."}
	for _, cfg := range promptConfigs {
		s := setupOf(t, cfg)
		for _, c := range promptCases {
			got = append(got, promptDigest(newScorePrompt(s, steps).messages(s.cfg.EvaluationParams, &c)))
		}
	}
	if !reflect.DeepEqual(got, pinnedDigests) {
		t.Errorf("scoring prompts changed: digests\n%q\nwant\n%q\n(a changed wording needs a new PromptVersion)", got, pinnedDigests)
	}
}

// FuzzScorePrompt compares the plan's prompt with the old builder's on
// arbitrary names, criteria, steps and case texts.
func FuzzScorePrompt(f *testing.F) {
	f.Add("Name", "Desc", "criteria", "step one", "step two", "in", "out", "ctx", false, true, uint8(3))
	f.Add("", "", "", "a", "", "", "", "", true, false, uint8(0))
	f.Fuzz(func(t *testing.T, name, desc, criteria, step1, step2, input, output, ctxText string, strict, reason bool, which uint8) {
		all := []string{"input", "actual_output", "expected_output", "context", "retrieval_context", "tools_called", "extra_one"}
		var params []string
		for i, p := range all {
			if which&(1<<i) != 0 {
				params = append(params, p)
			}
		}
		if len(params) == 0 {
			params = []string{"input"}
		}
		cfg := Config{Name: name, Description: desc, Criteria: criteria, EvaluationParams: params, StrictMode: strict, Reason: &reason}
		if strings.TrimSpace(criteria) == "" {
			cfg.Criteria = ""
			cfg.EvaluationSteps = []string{step1 + "x"}
		}
		s, err := resolve(&cfg)
		if err != nil {
			t.Skip()
		}
		steps := []string{step1, step2}
		c := abi.TestCase{Input: input, ActualOutput: output, Context: []string{ctxText, input},
			Extra: map[string]json.RawMessage{"extra_one": json.RawMessage(fmt.Sprintf("%q", output))}}
		got, want := newScorePrompt(s, steps).messages(params, &c), oldScoreMessages(s, steps, &c)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	})
}

// TestScorePromptStaticFirst: the system message, the prefix providers
// cache, is the same for every case of a metric, and the user message
// holds the case and nothing of the metric's instructions: what changes
// from case to case comes last.
func TestScorePromptStaticFirst(t *testing.T) {
	steps := []string{"Read the input.", "Decide."}
	for _, cfg := range promptConfigs {
		s := setupOf(t, cfg)
		sp := newScorePrompt(s, steps)
		first := sp.messages(s.cfg.EvaluationParams, &promptCases[0])
		for _, c := range promptCases {
			ms := sp.messages(s.cfg.EvaluationParams, &c)
			if ms[0] != first[0] || ms[0].Role != "system" {
				t.Errorf("config %s: the system message differs between cases", cfg)
			}
			for _, static := range []string{"Evaluation steps:", "Read the input.", "Example JSON:", ReasonFirstInstruction} {
				if strings.Contains(ms[1].Content, static) {
					t.Errorf("config %s, case %s: the user message holds %q, which is the same for every case", cfg, c.ID, static)
				}
			}
		}
		if !strings.Contains(first[0].Content, "Evaluation steps:\n1. Read the input.") {
			t.Errorf("config %s: the steps are not in the system message", cfg)
		}
	}
}

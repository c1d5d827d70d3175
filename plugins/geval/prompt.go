package geval

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// PromptVersion is embedded in every prompt the kind sends. Change it
// whenever a prompt's wording changes: cached steps and scores made with the
// old wording are then no longer served, because the host's judge cache is
// keyed on the prompt text.
const PromptVersion = "anvil-geval-v2"

const systemPrompt = "You are a meticulous evaluator of LLM outputs. Follow the instructions exactly and answer with JSON only. (prompt " + PromptVersion + ")"

// ReasonFirstInstruction is the sentence of the scoring prompt that fixes
// the order of the reply's keys: the host locates the score scanning the
// reply from its end, so the score must be the last thing the judge writes.
const ReasonFirstInstruction = `Write "reason" FIRST and "score" LAST, as the final key of the object.`

// stepsSchema is the schema of the steps-generation reply.
var stepsSchema = json.RawMessage(`{"type":"object","properties":{"steps":{"type":"array","items":{"type":"string"}}},"required":["steps"],"additionalProperties":false}`)

// scoreSchema is the schema of the scoring reply; "reason" precedes "score"
// so that structured-output decoders emit them in that order.
func scoreSchema(min, max int, reason bool) json.RawMessage {
	scoreProp := fmt.Sprintf(`"score":{"type":"integer","minimum":%d,"maximum":%d}`, min, max)
	if !reason {
		return json.RawMessage(`{"type":"object","properties":{` + scoreProp + `},"required":["score"],"additionalProperties":false}`)
	}
	return json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},` + scoreProp + `},"required":["reason","score"],"additionalProperties":false}`)
}

// paramsText joins field titles: "Input", "Input and Actual Output",
// "Input, Actual Output and Context".
func paramsText(params []string) string {
	titles := make([]string, len(params))
	for i, p := range params {
		titles[i] = abi.FieldTitle(p)
	}
	switch len(titles) {
	case 0:
		return ""
	case 1:
		return titles[0]
	}
	return strings.Join(titles[:len(titles)-1], ", ") + " and " + titles[len(titles)-1]
}

// stepsMessages is the steps-generation prompt. It depends only on the
// criteria, the evaluation params and PromptVersion — never on a case, the
// metric's name or scoring options — so every case and every run with the
// same criteria sends byte-identical messages, which the host's
// content-addressed cache and singleflight collapse to one judge call.
func stepsMessages(criteria string, params []string) []abi.Message {
	p := paramsText(params)
	var b strings.Builder
	fmt.Fprintf(&b, "Given the evaluation criteria below, which say how to judge the %s of a test case, write 3 to 4 concise evaluation steps that a judge will follow to score it.\n", p)
	fmt.Fprintf(&b, "The steps must make clear how to evaluate the %s in relation to one another, and must refer to them by these names.\n", p)
	if conversational(params) {
		b.WriteString(conversationNote)
	}
	b.WriteString("\n")
	b.WriteString("Evaluation criteria:\n")
	b.WriteString(criteria)
	b.WriteString("\n\n")
	b.WriteString(`Return only a JSON object with one key, "steps": a list of strings, one step each. No other text.` + "\n")
	b.WriteString("Example JSON:\n")
	b.WriteString(`{"steps": ["<first step>", "<second step>", "<third step>"]}`)
	return []abi.Message{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: b.String()},
	}
}

// conversationNote tells the judge how a conversational case reads. It is
// written only when the evaluation params include turns, so a single-turn
// metric's prompts stay byte-identical (and its cache entries valid).
const conversationNote = "The test case is a conversation between a user and an assistant. Its Turns are the messages in order, as a JSON list: each has a role (user, assistant, system or tool) and its content, and an assistant turn may list the tools it called and the passages it retrieved. Judge the assistant's turns in the light of the whole conversation.\n"

// conversational reports whether params show the judge a conversation.
func conversational(params []string) bool { return slices.Contains(params, abi.FieldTurns) }

// scorePrompt is the scoring prompt of a metric, less its test case.
// It is laid out static-first: the system message holds everything that is
// the same for every case of the metric — the role, the metric, the
// criteria, the steps, the rubric, the score's scale and the reply's
// shape — and the user message only the case (each evaluation param's
// title and the case's text of it, fenced) and a closing line. Providers
// cache a prompt's prefix (OpenAI and Gemini automatically, Anthropic at
// the breakpoint the judge sets on the system prompt), so every case after
// the first reads the static part from the cache. The system message is
// rendered once (plan.go).
type scorePrompt struct {
	system string
	titles []string // "Title:\n" of each evaluation param, after a "\n" from the second on
}

// caseHead and caseTail fence the test case in the user message.
const (
	caseHead = "Test case:\n<<<BEGIN TEST CASE>>>\n"
	caseTail = "<<<END TEST CASE>>>\n\nScore this test case as the instructions above say, and return only the JSON object."
)

// newScorePrompt renders DeepEval's G-Eval template with the score asked
// for last (after the reason), the rubric and the exact integer range
// spelled out, and the test case fenced in the user message.
func newScorePrompt(s *setup, steps []string) *scorePrompt {
	params := s.cfg.EvaluationParams
	p := paramsText(params)
	var b strings.Builder

	b.WriteString(systemPrompt + "\n\n")
	b.WriteString("You are an evaluator. Score the test case in the user's message by following the evaluation steps, one by one. ")
	fmt.Fprintf(&b, "Judge only the fields shown (%s).\n", p)
	if conversational(params) {
		b.WriteString(conversationNote)
	}
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
	sp := &scorePrompt{system: b.String(), titles: make([]string, len(params))}
	for i, param := range params {
		sp.titles[i] = abi.FieldTitle(param) + ":\n"
		if i > 0 {
			sp.titles[i] = "\n" + sp.titles[i]
		}
	}
	return sp
}

// messages is the scoring prompt of case c, built in one allocation of
// its user message (plus the slice).
func (sp *scorePrompt) messages(params []string, c *abi.TestCase) []abi.Message {
	// The texts are kept for the second pass: a list field's text is
	// built by Field, and building it twice would cost more than this.
	var small [8]string
	texts := small[:0]
	n := len(caseHead) + len(caseTail)
	for i, p := range params {
		text, _ := c.Field(p)
		texts = append(texts, text)
		n += len(sp.titles[i]) + len(text) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(caseHead)
	for i, text := range texts {
		b.WriteString(sp.titles[i])
		b.WriteString(text)
		b.WriteByte('\n')
	}
	b.WriteString(caseTail)
	return []abi.Message{
		{Role: "system", Content: sp.system},
		{Role: "user", Content: b.String()},
	}
}

func scoreWords(s *setup) string {
	if s.strict {
		return "1 or 0"
	}
	return fmt.Sprintf("%d to %d", s.min, s.max)
}

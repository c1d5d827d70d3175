package judged

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Prompts are a package's prompt conventions.
type Prompts struct {
	// Version is embedded in every prompt the package sends. Change it
	// whenever a prompt's wording changes: cached replies to the old
	// wording are then no longer served, because the host's judge cache is
	// keyed on the prompt text.
	Version string
	// SchemaPrefix names the package's schemas: "rag_" → "rag_verdicts".
	SchemaPrefix string
}

// System is the system prompt of every call.
func (p *Prompts) System() string {
	return "You are a meticulous evaluator of LLM outputs. Follow the instructions exactly and answer with JSON only. (prompt " + p.Version + ")"
}

// Messages is the system prompt, then user.
func (p *Prompts) Messages(user string) []abi.Message {
	return []abi.Message{
		{Role: "system", Content: p.System()},
		{Role: "user", Content: user},
	}
}

// ReasonMessages asks for a prose reason (reason_call). intro describes
// the setting; summary is the reason built from the verdicts.
func (p *Prompts) ReasonMessages(intro string, score float64, summary string) []abi.Message {
	var b strings.Builder
	b.WriteString(intro)
	fmt.Fprintf(&b, "\n\nScore: %s (from 0 to 1; higher is better).\n\n", FormatScore(score))
	b.WriteString("Verdicts:\n")
	b.WriteString(Fenced("VERDICTS", summary))
	b.WriteString("\n" + `Write a concise reason for the score, citing the failing items (if any) and why they fail. Return only a JSON object with one key, "reason": a string. No other text.`)
	return p.Messages(b.String())
}

// RepairMessages re-asks a call, showing the judge its previous reply, what
// is wrong with it, and what a valid reply holds (want: "exactly 3
// verdicts, one per …").
func RepairMessages(orig []abi.Message, previous, problem, want string) []abi.Message {
	out := append([]abi.Message(nil), orig...)
	out = append(out,
		abi.Message{Role: "assistant", Content: previous},
		abi.Message{Role: "user", Content: fmt.Sprintf(
			"Your reply is invalid (%s). Return the complete JSON object again with %s. No other text.",
			problem, want)},
	)
	return out
}

// Fenced renders a block of case text between markers, so that text inside
// it is read as data, not as instructions.
func Fenced(name, text string) string {
	return "<<<BEGIN " + name + ">>>\n" + text + "\n<<<END " + name + ">>>\n"
}

// Numbered renders items as "1. item" lines.
func Numbered(items []string) string {
	var b strings.Builder
	for i, it := range items {
		fmt.Fprintf(&b, "%d. %s\n", i+1, it)
	}
	return b.String()
}

// Bracketed renders chunks as "[1] chunk" blocks, one a line.
func Bracketed(chunks []string) string {
	var b strings.Builder
	for i, c := range chunks {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%d] %s", i+1, c)
	}
	return b.String()
}

// ListSchema is the schema of an extraction reply: {key: [string]}.
func ListSchema(key string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"` + key + `":{"type":"array","items":{"type":"string"}}},"required":["` + key + `"],"additionalProperties":false}`)
}

// ReasonSchema is the schema of the reason call's reply.
var ReasonSchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"],"additionalProperties":false}`)

// EnumJSON renders values as a JSON array.
func EnumJSON(values []string) string {
	b, _ := json.Marshal(values)
	return string(b)
}

// CountedVerdictsSchema is {"verdicts": [{verdict, reason}]} with exactly
// n verdicts, each one of values: a server that honours the bounds cannot
// miscount, and one that does not is caught by the count check.
func CountedVerdictsSchema(values []string, n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"verdicts":{"type":"array","minItems":%d,"maxItems":%d,"items":{"type":"object","properties":{"verdict":{"type":"string","enum":%s},"reason":{"type":"string"}},"required":["verdict","reason"],"additionalProperties":false}}},"required":["verdicts"],"additionalProperties":false}`,
		n, n, EnumJSON(values)))
}

// ItemVerdictsSchema is {key: [{<noun>, verdict, reason}]}: items the judge
// finds and judges in one call; minItems 0 or 1.
func ItemVerdictsSchema(key, noun string, values []string, minItems int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"array","minItems":%d,"items":{"type":"object","properties":{%q:{"type":"string"},"verdict":{"type":"string","enum":%s},"reason":{"type":"string"}},"required":[%q,"verdict","reason"],"additionalProperties":false}}},"required":[%q],"additionalProperties":false}`,
		key, minItems, noun, EnumJSON(values), noun, key))
}

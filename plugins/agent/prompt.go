package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
)

// PromptVersion is embedded in every prompt the kinds send. Change it
// whenever a prompt's wording changes: cached replies to the old wording are
// then no longer served, because the host's judge cache is keyed on the
// prompt text.
const PromptVersion = "anvil-agent-v1"

var prompts = &judged.Prompts{Version: PromptVersion, SchemaPrefix: "agent_"}

// argumentsMessages asks, in one call, whether each tool call's arguments
// address the input (argument_correctness).
func argumentsMessages(input string, calls []string) []abi.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Below are a user's input and the %d tool calls an AI agent made for it, each as name(arguments) → output. For each call, decide whether its arguments correctly and relevantly address the input.\n", len(calls))
	b.WriteString(`- "yes": the arguments are the right ones for what the input asks (right values, right scope), whatever the call returned.` + "\n")
	b.WriteString(`- "no": an argument is wrong, missing, made up, or the call does not serve the input at all.` + "\n")
	b.WriteString(`"reason": for "no", which argument is wrong and what it should be; for "yes", an empty string.` + "\n\n")
	b.WriteString("Input:\n")
	b.WriteString(judged.Fenced("INPUT", input))
	b.WriteString("\nTool calls:\n")
	b.WriteString(judged.Fenced("TOOL CALLS", strings.TrimSuffix(judged.Numbered(calls), "\n")))
	fmt.Fprintf(&b, "\n"+`Return only a JSON object with one key, "verdicts": a list of exactly %d objects, one per tool call, in the order of the numbered list, each with two keys, "verdict" ("yes" or "no") and "reason". The number of verdicts MUST equal the number of tool calls (%d). No other text.`, len(calls), len(calls))
	return prompts.Messages(b.String())
}

var taskSchema = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string"},"outcome":{"type":"string"},"score":{"type":"number","minimum":0,"maximum":1},"reason":{"type":"string"}},"required":["task","outcome","score","reason"],"additionalProperties":false}`)

// taskMessages asks, in one call, for the task, the outcome the agent
// reached and how far it achieves the task (task_completion). task is the
// configured task, "" to have the judge infer the user's goal.
func taskMessages(c abi.TestCase, task string) []abi.Message {
	var b strings.Builder
	b.WriteString("Below is what an AI agent was asked, the tool calls it made and its final output.\n")
	if task == "" {
		b.WriteString(`1. "task": state the user's goal, from the input, in one sentence.` + "\n")
	} else {
		b.WriteString(`1. "task": the task the agent was given, as below (repeat it).` + "\n")
	}
	b.WriteString(`2. "outcome": state what the agent actually achieved, from its tool calls and output, in one or two factual sentences; an intention or a promise is not an outcome.` + "\n")
	b.WriteString(`3. "score": how far the outcome achieves the task, from 0 (not at all) to 1 (fully); partial completion scores in between.` + "\n")
	b.WriteString(`4. "reason": one or two sentences on what is done and what is missing.` + "\n\n")
	if task != "" {
		b.WriteString("Task:\n")
		b.WriteString(judged.Fenced("TASK", task))
		b.WriteString("\n")
	}
	b.WriteString("Input:\n")
	b.WriteString(judged.Fenced("INPUT", c.Input))
	if len(c.ToolsCalled) > 0 {
		b.WriteString("\nTool calls, in order:\n")
		b.WriteString(judged.Fenced("TOOL CALLS", strings.TrimSuffix(judged.Numbered(toolsText(c.ToolsCalled)), "\n")))
	}
	b.WriteString("\nFinal output:\n")
	b.WriteString(judged.Fenced("OUTPUT", c.ActualOutput))
	b.WriteString("\n" + `Return only a JSON object with four keys, "task", "outcome", "score" (a number from 0 to 1) and "reason". No other text.`)
	return prompts.Messages(b.String())
}

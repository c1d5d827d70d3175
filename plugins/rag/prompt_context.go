package rag

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
)

// The verdict schemas of the retrieval-context kinds bound the list to the
// number of nodes (minItems = maxItems = n) where that number is known: a
// server that honours the bounds cannot miscount, and one that does not is
// caught by the kind's own count check and repair.

// countedVerdictsSchema: exactly n verdicts, each one of values
// (contextual_precision, hallucination).
var countedVerdictsSchema = judged.CountedVerdictsSchema

// sentenceVerdictsSchema: the expected output's sentences, at least one,
// each with its verdict (contextual_recall).
var sentenceVerdictsSchema = json.RawMessage(`{"type":"object","properties":{"verdicts":{"type":"array","minItems":1,"items":{"type":"object","properties":{"sentence":{"type":"string"},"verdict":{"type":"string","enum":["yes","no"]},"reason":{"type":"string"}},"required":["sentence","verdict","reason"],"additionalProperties":false}}},"required":["verdicts"],"additionalProperties":false}`)

// nodeStatementsSchema: exactly n nodes, each with its statements and
// their verdicts (contextual_relevancy).
func nodeStatementsSchema(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"nodes":{"type":"array","minItems":%d,"maxItems":%d,"items":{"type":"object","properties":{"statements":{"type":"array","items":{"type":"object","properties":{"statement":{"type":"string"},"verdict":{"type":"string","enum":["yes","no"]},"reason":{"type":"string"}},"required":["statement","verdict","reason"],"additionalProperties":false}}},"required":["statements"],"additionalProperties":false}}},"required":["nodes"],"additionalProperties":false}`, n, n))
}

// yesNoRules is the tail of a prompt with one yes/no verdict per item.
func yesNoRules(n int, noun string) string {
	return fmt.Sprintf(`Return only a JSON object with one key, "verdicts": a list of exactly %d objects, one per %s, in the order of the numbered list, each with two keys, "verdict" ("yes" or "no") and "reason". `+
		`The number of verdicts MUST equal the number of %ss (%d). No other text.`+"\n"+
		`Example JSON: {"verdicts": [{"verdict": "yes", "reason": "<why>"}, {"verdict": "no", "reason": "<why>"}]}`, n, noun, noun, n)
}

// precisionMessages asks, in one call, whether each ranked node was useful
// in arriving at the expected output (contextual_precision).
func precisionMessages(input, expected string, nodes []string) []abi.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Below are an input, the expected output for it, and the %d nodes of retrieval context a retriever returned for the input, in rank order (node 1 ranked highest). ", len(nodes))
	b.WriteString("For each node, decide whether it was useful in arriving at the expected output.\n")
	b.WriteString(`- "yes": the node holds information the expected output states or relies on, even if only part of it.` + "\n")
	b.WriteString(`- "no": nothing in the node helps to arrive at the expected output.` + "\n")
	b.WriteString(`"reason": one sentence; for "yes", quote the part of the node that is useful; for "no", say why it does not help. Judge each node on its own, whatever its rank.` + "\n\n")
	b.WriteString("Input:\n")
	b.WriteString(fenced("INPUT", input))
	b.WriteString("\nExpected output:\n")
	b.WriteString(fenced("EXPECTED OUTPUT", expected))
	b.WriteString("\nRetrieval context, in rank order:\n")
	b.WriteString(fenced("RETRIEVAL CONTEXT", contextText(nodes)))
	b.WriteString("\n")
	b.WriteString(yesNoRules(len(nodes), "node"))
	return messages(b.String())
}

// recallMessages asks, in one call, for the expected output's sentences
// and whether the retrieval context supports each (contextual_recall).
func recallMessages(expected string, nodes []string) []abi.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Below are an expected output and the %d nodes of retrieval context a retriever returned. ", len(nodes))
	b.WriteString("Split the expected output into its sentences, in order, and decide for each sentence whether it can be attributed to the retrieval context. Use ONLY the retrieval context, never prior knowledge.\n")
	b.WriteString(`- "yes": one or more nodes state the information in the sentence.` + "\n")
	b.WriteString(`- "no": no node states it.` + "\n")
	b.WriteString(`"reason": for "yes", the node number(s) (as [2]) and a short quote; for "no", what the retrieval context lacks.` + "\n\n")
	b.WriteString("Expected output:\n")
	b.WriteString(fenced("EXPECTED OUTPUT", expected))
	b.WriteString("\nRetrieval context:\n")
	b.WriteString(fenced("RETRIEVAL CONTEXT", contextText(nodes)))
	b.WriteString("\n" + `Return only a JSON object with one key, "verdicts": a list with one object per sentence of the expected output, in order, each with three keys: "sentence" (the sentence, as written), "verdict" ("yes" or "no") and "reason". No other text.` + "\n")
	b.WriteString(`Example JSON: {"verdicts": [{"sentence": "Refunds take 30 days.", "verdict": "yes", "reason": "[1] says 'refunds within 30 days'."}]}`)
	return messages(b.String())
}

// contextRelevancyMessages asks, in one call, for every node's statements
// and whether each is relevant to the input (contextual_relevancy).
func contextRelevancyMessages(input string, nodes []string) []abi.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Below are an input and the %d nodes of retrieval context a retriever returned for it. ", len(nodes))
	b.WriteString("For each node, in order, break the node into the statements it makes (each distinct piece of information, as a short self-contained sentence), and decide for each statement whether it is relevant to the input.\n")
	b.WriteString(`- "yes": the statement helps to address the input.` + "\n")
	b.WriteString(`- "no": the statement has nothing to do with the input.` + "\n")
	b.WriteString(`"reason": for "no", quote the irrelevant part and say why; for "yes", an empty string. A node that makes no statement (noise, markup) gets an empty "statements" list.` + "\n\n")
	b.WriteString("Input:\n")
	b.WriteString(fenced("INPUT", input))
	b.WriteString("\nRetrieval context:\n")
	b.WriteString(fenced("RETRIEVAL CONTEXT", contextText(nodes)))
	fmt.Fprintf(&b, "\n"+`Return only a JSON object with one key, "nodes": a list of exactly %d objects, one per node, in order, each with one key, "statements": a list of objects with three keys, "statement", "verdict" ("yes" or "no") and "reason". The number of entries in "nodes" MUST equal the number of nodes (%d). No other text.`+"\n", len(nodes), len(nodes))
	b.WriteString(`Example JSON: {"nodes": [{"statements": [{"statement": "Paris is the capital of France.", "verdict": "yes", "reason": ""}, {"statement": "There was a cat.", "verdict": "no", "reason": "'There was a cat' has nothing to do with capitals."}]}, {"statements": []}]}`)
	return messages(b.String())
}

// hallucinationMessages asks, in one call, whether the actual output
// agrees with, contradicts or does not address each context
// (hallucination).
func hallucinationMessages(actualOutput string, contexts []string) []abi.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Below are an AI's actual output and %d contexts, each a piece of ground truth. For each context, decide whether the actual output agrees with it. Use ONLY the contexts, never prior knowledge.\n", len(contexts))
	b.WriteString(`- "yes": the actual output agrees with the context.` + "\n")
	b.WriteString(`- "no": the actual output CONTRADICTS the context: it states something the context says is false.` + "\n")
	b.WriteString(`- "idk": the actual output does not address the context. Leaving out information the context holds is NOT a contradiction.` + "\n")
	b.WriteString(`"reason": for "no", quote what the actual output says and what the context says instead; for "yes" and "idk", one short sentence.` + "\n\n")
	b.WriteString("Actual output:\n")
	b.WriteString(fenced("ACTUAL OUTPUT", actualOutput))
	b.WriteString("\nContexts:\n")
	b.WriteString(fenced("CONTEXTS", contextText(contexts)))
	b.WriteString("\n")
	b.WriteString(verdictRules(len(contexts), "context"))
	return messages(b.String())
}

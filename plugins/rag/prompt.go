package rag

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
const PromptVersion = "anvil-rag-v1"

var prompts = &judged.Prompts{Version: PromptVersion, SchemaPrefix: "rag_"}

var (
	statementsSchema = judged.ListSchema("statements")
	claimsSchema     = judged.ListSchema("claims")
	truthsSchema     = judged.ListSchema("truths")
	// verdictsSchema does not bound the array's length (minItems/maxItems):
	// not every structured-output server honours them, and the kind checks
	// the count itself, with a repair that names the mismatch.
	verdictsSchema = json.RawMessage(`{"type":"object","properties":{"verdicts":{"type":"array","items":{"type":"object","properties":{"verdict":{"type":"string","enum":["yes","no","idk"]},"reason":{"type":"string"}},"required":["verdict","reason"],"additionalProperties":false}}},"required":["verdicts"],"additionalProperties":false}`)
)

func messages(user string) []abi.Message { return prompts.Messages(user) }

var (
	fenced      = judged.Fenced
	numbered    = judged.Numbered
	contextText = judged.Bracketed // retrieval-context chunks as "[1] chunk" blocks
)

// statementsMessages asks for the statements of the actual output
// (answer_relevancy, step 1).
func statementsMessages(actualOutput string) []abi.Message {
	var b strings.Builder
	b.WriteString("Break the text below into the statements it makes: each distinct piece of information, assertion or suggestion, as a short self-contained sentence (replace pronouns by what they refer to). ")
	b.WriteString("Split compound sentences into separate statements. An ambiguous phrase or a single word counts as a statement only when it is not part of a larger statement. ")
	b.WriteString("Do not add, judge or correct anything; keep the text's own meaning.\n\n")
	b.WriteString("Example text: Our laptop has a Retina display and a 12-hour battery. Contact support for help.\n")
	b.WriteString(`Example JSON: {"statements": ["The laptop has a Retina display.", "The laptop has a 12-hour battery.", "Contact support for help."]}` + "\n\n")
	b.WriteString("Text:\n")
	b.WriteString(fenced("TEXT", actualOutput))
	b.WriteString("\n" + `Return only a JSON object with one key, "statements": a list of strings, one per statement, in the order they appear in the text. An empty list if the text makes no statement. No other text.`)
	return messages(b.String())
}

// claimsMessages asks for the factual claims of the actual output
// (faithfulness, step 1).
func claimsMessages(actualOutput string) []abi.Message {
	var b strings.Builder
	b.WriteString("Extract every factual claim that the text below, written by an AI, states or directly implies. ")
	b.WriteString("Each claim is a self-contained sentence that keeps the context it was stated in (not a cherry-picked fragment). ")
	b.WriteString("Include a claim whether or not it is true; take the text at face value and do not use prior knowledge. ")
	b.WriteString("Leave out opinions, questions, greetings and instructions to the reader.\n\n")
	b.WriteString("Example text: Einstein won the Nobel Prize in 1968 for his discovery of the photoelectric effect.\n")
	b.WriteString(`Example JSON: {"claims": ["Einstein won the Nobel Prize for his discovery of the photoelectric effect.", "Einstein won the Nobel Prize in 1968."]}` + "\n\n")
	b.WriteString("Text:\n")
	b.WriteString(fenced("TEXT", actualOutput))
	b.WriteString("\n" + `Return only a JSON object with one key, "claims": a list of strings, one per claim, in the order they appear in the text. An empty list if the text makes no factual claim. No other text.`)
	return messages(b.String())
}

// truthsMessages asks for the factual truths of the retrieval context
// (faithfulness with extract_truths). limit 0 means no limit.
func truthsMessages(chunks []string, limit int) []abi.Message {
	var b strings.Builder
	b.WriteString("Extract the factual truths that the retrieval context below states, as self-contained sentences. Take the context at face value and do not use prior knowledge.")
	if limit > 0 {
		fmt.Fprintf(&b, " Extract at most %d truths: the %d most important ones.", limit, limit)
	}
	b.WriteString("\n\nRetrieval context:\n")
	b.WriteString(fenced("RETRIEVAL CONTEXT", contextText(chunks)))
	b.WriteString("\n" + `Return only a JSON object with one key, "truths": a list of strings, one per truth. No other text.`)
	return messages(b.String())
}

// verdictRules is the shared tail of both verdict prompts.
func verdictRules(n int, noun string) string {
	return fmt.Sprintf(`Return only a JSON object with one key, "verdicts": a list of exactly %d objects, one per %s, in the order of the numbered list, each with two keys, "verdict" ("yes", "no" or "idk") and "reason". `+
		`The number of verdicts MUST equal the number of %ss (%d). No other text.`+"\n"+
		`Example JSON: {"verdicts": [{"verdict": "yes", "reason": ""}, {"verdict": "no", "reason": "<why>"}]}`, n, noun, noun, n)
}

// relevancyVerdictMessages asks, in one call, whether each statement is
// relevant to the input (answer_relevancy, step 2).
func relevancyVerdictMessages(input string, statements []string) []abi.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Below are an input and the %d statements an AI's answer to it makes. For each statement, decide whether it is relevant to addressing the input.\n", len(statements))
	b.WriteString(`- "yes": the statement is relevant to addressing the input.` + "\n")
	b.WriteString(`- "no": the statement is irrelevant to the input.` + "\n")
	b.WriteString(`- "idk": the statement is ambiguous: not directly relevant, but it could serve as a supporting point in addressing the input.` + "\n")
	b.WriteString(`"reason": for "no" and "idk", one sentence saying why; for "yes", an empty string.` + "\n\n")
	b.WriteString("Input:\n")
	b.WriteString(fenced("INPUT", input))
	b.WriteString("\nStatements:\n")
	b.WriteString(fenced("STATEMENTS", strings.TrimSuffix(numbered(statements), "\n")))
	b.WriteString("\n")
	b.WriteString(verdictRules(len(statements), "statement"))
	return messages(b.String())
}

// faithfulnessVerdictMessages asks, in one call, whether the context
// supports, contradicts or does not mention each claim (faithfulness, step
// 2). source is the retrieval context, or the truths extracted from it.
func faithfulnessVerdictMessages(source string, claims []string) []abi.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Below are a retrieval context and %d claims an AI's answer makes. For each claim, decide whether it agrees with the retrieval context. Use ONLY the retrieval context, never prior knowledge.\n", len(claims))
	b.WriteString(`- "yes": the retrieval context supports the claim.` + "\n")
	b.WriteString(`- "no": the retrieval context DIRECTLY contradicts the claim. A claim stated in hedged or speculative language ("may", "possibly") is not a contradiction.` + "\n")
	b.WriteString(`- "idk": the retrieval context does not mention the claim: it neither supports nor contradicts it.` + "\n")
	b.WriteString(`"reason": for "no", what the retrieval context says instead (a correction, quoting it); for "idk", what the context lacks; for "yes", an empty string.` + "\n\n")
	b.WriteString("Retrieval context:\n")
	b.WriteString(fenced("RETRIEVAL CONTEXT", source))
	b.WriteString("\nClaims:\n")
	b.WriteString(fenced("CLAIMS", strings.TrimSuffix(numbered(claims), "\n")))
	b.WriteString("\n")
	b.WriteString(verdictRules(len(claims), "claim"))
	return messages(b.String())
}

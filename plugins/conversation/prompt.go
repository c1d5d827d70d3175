package conversation

import (
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// PromptVersion is embedded in every prompt the kinds send. Change it
// whenever a prompt's wording changes: cached replies to the old wording
// are then no longer served (the host's judge cache is keyed on the text).
const PromptVersion = "anvil-conversation-v1"

const systemPrompt = "You are a meticulous evaluator of conversations between a user and an AI assistant. Follow the instructions exactly and answer with JSON only. (prompt " + PromptVersion + ")"

// Reply schemas.
const (
	verdictSchema    = `{"type":"object","properties":{"reason":{"type":"string"},"verdict":{"type":"string","enum":["yes","no"]}},"required":["reason","verdict"],"additionalProperties":false}`
	factsSchema      = `{"type":"object","properties":{"facts":{"type":"object","additionalProperties":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]}}},"required":["facts"],"additionalProperties":false}`
	intentionsSchema = `{"type":"object","properties":{"intentions":{"type":"array","items":{"type":"string"}}},"required":["intentions"],"additionalProperties":false}`
	outOfRoleSchema  = `{"type":"object","properties":{"out_of_character":{"type":"array","items":{"type":"object","properties":{"turn":{"type":"integer","minimum":1},"reason":{"type":"string"}},"required":["turn","reason"],"additionalProperties":false}}},"required":["out_of_character"],"additionalProperties":false}`
)

// messages lays a prompt out static-first, as geval's and dag's are: the
// system message holds the instructions and the reply's shape, the same
// for every case of a kind, and the user message only the case's text, so
// a provider's prefix cache serves the instructions after the first call.
func messages(instructions, data string) []abi.Message {
	return []abi.Message{
		{Role: "system", Content: systemPrompt + "\n\n" + instructions},
		{Role: "user", Content: data + "\nAnswer as the instructions say, with the JSON object only."},
	}
}

// fenced renders case text between markers, so that text inside is read
// as data, not as instructions.
func fenced(name, text string) string {
	return "<<<BEGIN " + name + ">>>\n" + text + "\n<<<END " + name + ">>>\n"
}

// turnsText renders turns as §8.1 does; no turns is an empty list.
func turnsText(turns []abi.Turn) string {
	if t, ok := abi.TurnsText(turns); ok {
		return t
	}
	return "[]"
}

const turnsNote = "A conversation is a JSON list of turns in order; each has a role (user, assistant, system or tool) and its content, and an assistant turn may list the tools it called and the passages it retrieved.\n\n"

const verdictAsk = `Return only a JSON object with two keys, in this order: "reason", one or two sentences citing the turns concerned, then "verdict", exactly "yes" or "no". No other text.`

const factsInstructions = "Extract the facts the USER MESSAGE in the user's message states about the user or their situation: names, numbers, dates, preferences, constraints, corrections of what they said earlier. " +
	"Use the EARLIER TURNS only to understand the message (a \"yes\" confirming something the assistant asked is a fact); do not repeat facts from earlier turns that the message does not state or confirm. Take the message at face value; add nothing you know yourself.\n\n" +
	turnsNote +
	"Return only a JSON object with one key, \"facts\": an object whose keys name each fact (\"Allergy\", \"Order number\") and whose values are a string or a list of strings. An empty object when the message states no fact. No other text.\n" +
	`Example JSON: {"facts": {"Order number": "o-5521", "Allergies": ["peanuts", "sesame"]}}`

// factsMessages asks what facts user turn i gives (knowledge_retention).
func factsMessages(turns []abi.Turn, i int) []abi.Message {
	return messages(factsInstructions,
		"Earlier turns:\n"+fenced("EARLIER TURNS", turnsText(turns[:i]))+"\nUser message:\n"+fenced("USER MESSAGE", turns[i].Content))
}

const retentionInstructions = "Earlier in a conversation the user told an AI assistant the FACTS in the user's message. Decide whether the ASSISTANT MESSAGE shows that it forgot or contradicts any of them: " +
	"asking again for something already stated, assuming something the facts rule out, or stating the opposite.\n" +
	"Asking to clarify, correct or confirm a fact is NOT forgetting. Take the facts at face value. The facts are a JSON list in the order the user gave them; a later fact overrides an earlier one.\n\n" +
	"Verdict: \"yes\" when the message forgets or contradicts a fact, \"no\" when it does not. " + verdictAsk

// retentionMessages asks whether an assistant turn forgets or contradicts
// the facts the user gave before it (knowledge_retention).
func retentionMessages(message string, knowledge string) []abi.Message {
	return messages(retentionInstructions,
		"Facts from the user:\n"+fenced("FACTS", knowledge)+"\nAssistant message:\n"+fenced("ASSISTANT MESSAGE", message))
}

const outOfRoleInstructions = "An AI assistant was told to play the ROLE in the user's message. List the assistant turns of the CONVERSATION in which it breaks that role: " +
	"it says or does what the role would not (wrong persona, tone, knowledge or limits), or it drops the role. User, system and tool turns are never listed.\n\n" +
	turnsNote + "The conversation's turns are numbered from 1, one a line.\n\n" +
	"Return only a JSON object with one key, \"out_of_character\": a list with one object per assistant turn that breaks the role, each with \"turn\" (its number) and \"reason\" (why it breaks the role). An empty list when every assistant turn keeps the role. List a turn at most once. No other text.\n" +
	`Example JSON: {"out_of_character": [{"turn": 4, "reason": "The assistant, told to be a formal bank clerk, jokes about the user's debts."}]}`

// outOfRoleMessages asks which assistant turns break the chatbot role
// (role_adherence).
func outOfRoleMessages(turns []abi.Turn, role string) []abi.Message {
	return messages(outOfRoleInstructions,
		"Role:\n"+fenced("ROLE", role)+"\nConversation:\n"+fenced("CONVERSATION", numberedTurns(turns)))
}

// numberedTurns renders each turn on a line of its own, numbered from 1.
func numberedTurns(turns []abi.Turn) string {
	var b strings.Builder
	for i, t := range turns {
		text, _ := abi.TurnsText([]abi.Turn{t})
		fmt.Fprintf(&b, "%d. %s\n", i+1, strings.TrimSuffix(strings.TrimPrefix(text, "["), "]"))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

const intentionsInstructions = "List what the USER wanted from the CONVERSATION in the user's message: each distinct goal, request or question they brought to the assistant, in their words as far as possible. " +
	"Only the user's intentions: not the assistant's, not small talk such as greetings or thanks.\n\n" +
	turnsNote +
	"Return only a JSON object with one key, \"intentions\": a list of strings, one intention each, each a short sentence starting with \"The user wants\". An empty list when the user wanted nothing. No other text.\n" +
	`Example JSON: {"intentions": ["The user wants a refund for broken headphones.", "The user wants to know when the money arrives."]}`

// intentionsMessages asks what the user came to do
// (conversation_completeness).
func intentionsMessages(turns []abi.Turn) []abi.Message {
	return messages(intentionsInstructions, "Conversation:\n"+fenced("CONVERSATION", turnsText(turns)))
}

const completenessInstructions = "Decide whether the assistant met the user's INTENTION in the course of the CONVERSATION, both in the user's message: it did what was asked, answered the question, or gave the user what they needed. " +
	"Refusing, deflecting, answering something else or leaving it unfinished does not meet it.\n\n" +
	turnsNote +
	"Verdict: \"yes\" when the intention was met, \"no\" when it was not. " + verdictAsk

// completenessMessages asks whether the conversation met one intention
// (conversation_completeness).
func completenessMessages(turns []abi.Turn, intention string) []abi.Message {
	return messages(completenessInstructions,
		"Intention:\n"+fenced("INTENTION", intention)+"\nConversation:\n"+fenced("CONVERSATION", turnsText(turns)))
}

const relevancyInstructions = "Decide whether the LAST assistant turn of the EXCERPT of a conversation in the user's message is relevant: it responds to what the user said in the excerpt, in the light of the turns before it. " +
	"Off-topic content, ignoring the user's request, or answering a different question is not relevant; a short but pertinent answer, or a needed clarifying question, is.\n\n" +
	turnsNote +
	"Verdict: \"yes\" when the last assistant turn is relevant, \"no\" when it is not. " + verdictAsk

// relevancyMessages asks whether the last assistant turn of a window is
// relevant in its context (turn_relevancy).
func relevancyMessages(window []abi.Turn) []abi.Message {
	return messages(relevancyInstructions, "Excerpt:\n"+fenced("EXCERPT", turnsText(window)))
}

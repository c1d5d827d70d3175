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

func messages(user string) []abi.Message {
	return []abi.Message{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: user},
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

const turnsNote = "The conversation is a JSON list of turns in order; each has a role (user, assistant, system or tool) and its content, and an assistant turn may list the tools it called and the passages it retrieved.\n\n"

const verdictAsk = `Return only a JSON object with two keys, in this order: "reason", one or two sentences citing the turns concerned, then "verdict", exactly "yes" or "no". No other text.`

// factsMessages asks what facts user turn i gives (knowledge_retention).
func factsMessages(turns []abi.Turn, i int) []abi.Message {
	var b strings.Builder
	b.WriteString("Extract the facts the USER MESSAGE below states about the user or their situation: names, numbers, dates, preferences, constraints, corrections of what they said earlier. ")
	b.WriteString("Use the earlier conversation only to understand the message (a \"yes\" confirming something the assistant asked is a fact); do not repeat facts from earlier turns that the message does not state or confirm. Take the message at face value; add nothing you know yourself.\n\n")
	b.WriteString(turnsNote)
	b.WriteString("Earlier conversation:\n")
	b.WriteString(fenced("EARLIER TURNS", turnsText(turns[:i])))
	b.WriteString("\nUser message:\n")
	b.WriteString(fenced("USER MESSAGE", turns[i].Content))
	b.WriteString("\nReturn only a JSON object with one key, \"facts\": an object whose keys name each fact (\"Allergy\", \"Order number\") and whose values are a string or a list of strings. An empty object when the message states no fact. No other text.\n")
	b.WriteString(`Example JSON: {"facts": {"Order number": "o-5521", "Allergies": ["peanuts", "sesame"]}}`)
	return messages(b.String())
}

// retentionMessages asks whether assistant turn i forgets or contradicts
// the facts the user gave before it (knowledge_retention).
func retentionMessages(message string, knowledge string) []abi.Message {
	var b strings.Builder
	b.WriteString("Earlier in a conversation the user told an AI assistant the facts below. Decide whether the ASSISTANT MESSAGE shows that it forgot or contradicts any of them: ")
	b.WriteString("asking again for something already stated, assuming something the facts rule out, or stating the opposite.\n")
	b.WriteString("Asking to clarify, correct or confirm a fact is NOT forgetting. Take the facts at face value.\n\n")
	b.WriteString("Facts from the user, in the order given (a JSON list; a later fact overrides an earlier one):\n")
	b.WriteString(fenced("FACTS", knowledge))
	b.WriteString("\nAssistant message:\n")
	b.WriteString(fenced("ASSISTANT MESSAGE", message))
	b.WriteString("\nVerdict: \"yes\" when the message forgets or contradicts a fact, \"no\" when it does not. ")
	b.WriteString(verdictAsk)
	return messages(b.String())
}

// outOfRoleMessages asks which assistant turns break the chatbot role
// (role_adherence). Turns are numbered from 1 in the prompt.
func outOfRoleMessages(turns []abi.Turn, role string) []abi.Message {
	var b strings.Builder
	b.WriteString("An AI assistant was told to play the ROLE below. List the assistant turns of the conversation in which it breaks that role: ")
	b.WriteString("it says or does what the role would not (wrong persona, tone, knowledge or limits), or it drops the role. User, system and tool turns are never listed.\n\n")
	b.WriteString("Role:\n")
	b.WriteString(fenced("ROLE", role))
	b.WriteString("\n" + turnsNote)
	b.WriteString("Conversation (turns numbered from 1):\n")
	b.WriteString(fenced("CONVERSATION", numberedTurns(turns)))
	b.WriteString("\nReturn only a JSON object with one key, \"out_of_character\": a list with one object per assistant turn that breaks the role, each with \"turn\" (its number) and \"reason\" (why it breaks the role). An empty list when every assistant turn keeps the role. List a turn at most once. No other text.\n")
	b.WriteString(`Example JSON: {"out_of_character": [{"turn": 4, "reason": "The assistant, told to be a formal bank clerk, jokes about the user's debts."}]}`)
	return messages(b.String())
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

// intentionsMessages asks what the user came to do
// (conversation_completeness).
func intentionsMessages(turns []abi.Turn) []abi.Message {
	var b strings.Builder
	b.WriteString("List what the USER wanted from this conversation: each distinct goal, request or question they brought to the assistant, in their words as far as possible. ")
	b.WriteString("Only the user's intentions: not the assistant's, not small talk such as greetings or thanks.\n\n")
	b.WriteString(turnsNote)
	b.WriteString("Conversation:\n")
	b.WriteString(fenced("CONVERSATION", turnsText(turns)))
	b.WriteString("\nReturn only a JSON object with one key, \"intentions\": a list of strings, one intention each, each a short sentence starting with \"The user wants\". An empty list when the user wanted nothing. No other text.\n")
	b.WriteString(`Example JSON: {"intentions": ["The user wants a refund for broken headphones.", "The user wants to know when the money arrives."]}`)
	return messages(b.String())
}

// completenessMessages asks whether the conversation met one intention
// (conversation_completeness).
func completenessMessages(turns []abi.Turn, intention string) []abi.Message {
	var b strings.Builder
	b.WriteString("Decide whether the assistant met the user's INTENTION below in the course of the conversation: it did what was asked, answered the question, or gave the user what they needed. ")
	b.WriteString("Refusing, deflecting, answering something else or leaving it unfinished does not meet it.\n\n")
	b.WriteString("Intention:\n")
	b.WriteString(fenced("INTENTION", intention))
	b.WriteString("\n" + turnsNote)
	b.WriteString("Conversation:\n")
	b.WriteString(fenced("CONVERSATION", turnsText(turns)))
	b.WriteString("\nVerdict: \"yes\" when the intention was met, \"no\" when it was not. ")
	b.WriteString(verdictAsk)
	return messages(b.String())
}

// relevancyMessages asks whether the last assistant turn of a window is
// relevant in its context (turn_relevancy).
func relevancyMessages(window []abi.Turn) []abi.Message {
	var b strings.Builder
	b.WriteString("Decide whether the LAST assistant turn of this excerpt of a conversation is relevant: it responds to what the user said in the excerpt, in the light of the turns before it. ")
	b.WriteString("Off-topic content, ignoring the user's request, or answering a different question is not relevant; a short but pertinent answer, or a needed clarifying question, is.\n\n")
	b.WriteString(turnsNote)
	b.WriteString("Excerpt:\n")
	b.WriteString(fenced("EXCERPT", turnsText(window)))
	b.WriteString("\nVerdict: \"yes\" when the last assistant turn is relevant, \"no\" when it is not. ")
	b.WriteString(verdictAsk)
	return messages(b.String())
}

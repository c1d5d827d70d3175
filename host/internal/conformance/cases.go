package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// fullCase has every standard field set, and one extra field: the
// single-turn ones and the conversational ones (ABI minor 4) together,
// which no dataset gives (a dataset case is one or the other) but which
// serves every kind with one case.
func fullCase(id string) abi.TestCase {
	return abi.TestCase{
		ID:               id,
		Input:            "What is the capital of France, and how long has it been?",
		ActualOutput:     "Paris is the capital of France; it has been the capital for most of the last thousand years.",
		ExpectedOutput:   "Paris",
		Context:          []string{"France is a country in Western Europe. Its capital is Paris."},
		RetrievalContext: []string{"Paris is the capital and largest city of France.", "Paris became the capital under Clovis I around 508."},
		ToolsCalled:      []abi.ToolCall{{Name: "lookup_capital", Arguments: json.RawMessage(`{"country":"France"}`), Output: json.RawMessage(`"Paris"`)}},
		ExpectedTools:    []abi.ToolCall{{Name: "lookup_capital"}},
		Turns: []abi.Turn{
			{Role: abi.RoleSystem, Content: "You answer geography questions."},
			{Role: abi.RoleUser, Content: "What is the capital of France?"},
			{Role: abi.RoleAssistant, Content: "Paris.", ToolsCalled: []abi.ToolCall{{Name: "lookup_capital", Arguments: json.RawMessage(`{"country":"France"}`)}},
				RetrievalContext: []string{"Paris is the capital and largest city of France."}},
			{Role: abi.RoleUser, Content: "And how long has it been?"},
			{Role: abi.RoleAssistant, Content: "For most of the last thousand years."},
		},
		Scenario:        "A student asks about the capital of France.",
		ExpectedOutcome: "The student learns the capital and how long it has been.",
		ChatbotRole:     "A concise geography tutor.",
		Extra:           map[string]json.RawMessage{"customer_tier": json.RawMessage(`"gold"`)},
	}
}

// unicodeCase has text in several scripts, emoji sequences, combining
// marks and right-to-left text in every field.
func unicodeCase() abi.TestCase {
	c := fullCase("kit-unicode-ü東🗼")
	c.Input = "¿Dónde está 東京? Qu'est-ce que « l'été » ? 👩‍👩‍👧‍👦"
	c.ActualOutput = "東京 (Tōkyō) は日本の首都です。 مرحبا بالعالم — e\u0301te\u0301 ≠ été; 🇫🇷 🗼 \u200b zero-width"
	c.ExpectedOutput = "東京"
	c.Context = []string{"Токио — столица Японии.", "טוקיו היא בירת יפן"}
	c.RetrievalContext = []string{"東京都は日本の首都である。", "Ελλάδα: Αθήνα"}
	c.Turns = []abi.Turn{
		{Role: abi.RoleUser, Content: c.Input},
		{Role: abi.RoleAssistant, Content: c.ActualOutput},
	}
	c.Scenario = "Un utilisateur demande « la capitale » 東京 🗼"
	c.Extra = map[string]json.RawMessage{"customer_tier": json.RawMessage(`"золото ✨"`)}
	return c
}

// largeCase has a 256 KiB actual output, a 16 KiB input and 32 contexts
// of 4 KiB each: far inside the default limits, far past toy sizes.
func largeCase() abi.TestCase {
	c := fullCase("kit-large")
	sentence := "Paris is the capital of France and its largest city. "
	c.ActualOutput = strings.Repeat(sentence, 256<<10/len(sentence))
	c.Input = strings.Repeat("Tell me about the capital of France. ", 16<<10/37)
	c.RetrievalContext = nil
	for i := 0; i < 32; i++ {
		c.RetrievalContext = append(c.RetrievalContext, fmt.Sprintf("passage %d: ", i)+strings.Repeat(sentence, 4<<10/len(sentence)))
	}
	c.Context = c.RetrievalContext[:4]
	c.Turns = append(slices.Clone(c.Turns), abi.Turn{Role: abi.RoleUser, Content: c.Input}, abi.Turn{Role: abi.RoleAssistant, Content: c.ActualOutput})
	return c
}

// without returns c with field removed (a standard field or an extra).
func without(c abi.TestCase, field string) abi.TestCase {
	switch field {
	case abi.FieldInput:
		c.Input = ""
	case abi.FieldActualOutput:
		c.ActualOutput = ""
	case abi.FieldExpectedOutput:
		c.ExpectedOutput = ""
	case abi.FieldContext:
		c.Context = nil
	case abi.FieldRetrievalContext:
		c.RetrievalContext = nil
	case abi.FieldToolsCalled:
		c.ToolsCalled = nil
	case abi.FieldExpectedTools:
		c.ExpectedTools = nil
	case abi.FieldTurns:
		c.Turns = nil
	case abi.FieldScenario:
		c.Scenario = ""
	case abi.FieldExpectedOutcome:
		c.ExpectedOutcome = ""
	case abi.FieldChatbotRole:
		c.ChatbotRole = ""
	case abi.FieldLastUserTurn, abi.FieldLastAssistantTurn:
		role := abi.RoleUser
		if field == abi.FieldLastAssistantTurn {
			role = abi.RoleAssistant
		}
		var keep []abi.Turn
		for _, t := range c.Turns {
			if t.Role != role {
				keep = append(keep, t)
			}
		}
		c.Turns = keep
	default:
		extra := map[string]json.RawMessage{}
		for k, v := range c.Extra {
			if k != field {
				extra[k] = v
			}
		}
		c.Extra = extra
	}
	return c
}

// withField makes sure c has a value for a free-form required field.
func withField(c abi.TestCase, field string) abi.TestCase {
	switch field {
	case abi.FieldInput, abi.FieldActualOutput, abi.FieldExpectedOutput, abi.FieldContext,
		abi.FieldRetrievalContext, abi.FieldToolsCalled, abi.FieldExpectedTools,
		abi.FieldTurns, abi.FieldScenario, abi.FieldExpectedOutcome, abi.FieldChatbotRole,
		abi.FieldLastUserTurn, abi.FieldLastAssistantTurn:
		return c
	}
	extra := map[string]json.RawMessage{}
	for k, v := range c.Extra {
		extra[k] = v
	}
	if _, ok := extra[field]; !ok {
		extra[field] = json.RawMessage(`"conformance value"`)
	}
	c.Extra = extra
	return c
}

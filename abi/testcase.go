package abi

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Standard test-case field names, as used in RequiredFields and in metric
// configuration ("evaluation_params").
const (
	FieldInput            = "input"
	FieldActualOutput     = "actual_output"
	FieldExpectedOutput   = "expected_output"
	FieldContext          = "context"
	FieldRetrievalContext = "retrieval_context"
	FieldToolsCalled      = "tools_called"
	FieldExpectedTools    = "expected_tools"
	// The conversational fields (ABI minor 4).
	FieldTurns           = "turns"
	FieldScenario        = "scenario"
	FieldExpectedOutcome = "expected_outcome"
	FieldChatbotRole     = "chatbot_role"
	// Derived from turns (ABI minor 4): the content of the last user or
	// assistant turn, so that a kind which reads one text (a DAG node, a
	// geval) can be pointed at a conversation's last exchange.
	FieldLastUserTurn      = "last_user_turn"
	FieldLastAssistantTurn = "last_assistant_turn"
)

// StandardFields lists the standard fields, TestCase's members, in their
// canonical order: the single-turn ones, then the conversational ones
// (ABI minor 4).
var StandardFields = []string{
	FieldInput, FieldActualOutput, FieldExpectedOutput, FieldContext,
	FieldRetrievalContext, FieldToolsCalled, FieldExpectedTools,
	FieldTurns, FieldScenario, FieldExpectedOutcome, FieldChatbotRole,
}

// DerivedFields are the field names Field renders from other fields
// rather than from a member of their own (ABI minor 4).
var DerivedFields = []string{FieldLastUserTurn, FieldLastAssistantTurn}

// Turn roles. A conversational case's turns use only these.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
)

// TestCase is one row of a dataset.
type TestCase struct {
	// ID is unique within a dataset.
	ID               string     `json:"id"`
	Input            string     `json:"input,omitempty"`
	ActualOutput     string     `json:"actual_output,omitempty"`
	ExpectedOutput   string     `json:"expected_output,omitempty"`
	Context          []string   `json:"context,omitempty"`
	RetrievalContext []string   `json:"retrieval_context,omitempty"`
	ToolsCalled      []ToolCall `json:"tools_called,omitempty"`
	ExpectedTools    []ToolCall `json:"expected_tools,omitempty"`
	// Turns makes the case conversational (ABI minor 4): the exchange in
	// order. A conversational case has no input, actual_output,
	// expected_output, retrieval_context, tools_called or expected_tools
	// of its own (those belong to its turns); context and extra apply to
	// the whole conversation.
	Turns []Turn `json:"turns,omitempty"`
	// Scenario, ExpectedOutcome and ChatbotRole describe a conversation
	// (ABI minor 4): what the user is trying to do, what should come of
	// it, and the role the assistant was told to play.
	Scenario        string `json:"scenario,omitempty"`
	ExpectedOutcome string `json:"expected_outcome,omitempty"`
	ChatbotRole     string `json:"chatbot_role,omitempty"`
	// Extra holds free-form fields by name, as they were in the dataset.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// ToolCall is a tool an agent called (or was expected to call).
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// Turn is one message of a conversation (ABI minor 4).
type Turn struct {
	// Role is one of RoleUser, RoleAssistant, RoleSystem, RoleTool.
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolsCalled and RetrievalContext are what the assistant did to
	// produce this turn.
	ToolsCalled      []ToolCall `json:"tools_called,omitempty"`
	RetrievalContext []string   `json:"retrieval_context,omitempty"`
}

// Conversational reports whether the case is a multi-turn one.
func (c *TestCase) Conversational() bool { return len(c.Turns) > 0 }

// Has reports whether the case has a non-empty value for field.
func (c *TestCase) Has(field string) bool {
	_, ok := c.Field(field)
	return ok
}

// Field renders a field as prompt text: strings as they are, lists one item
// a line, tool calls and free-form values as compact JSON. ok is false when
// the field is absent or empty.
func (c *TestCase) Field(field string) (text string, ok bool) {
	switch field {
	case FieldInput:
		return c.Input, c.Input != ""
	case FieldActualOutput:
		return c.ActualOutput, c.ActualOutput != ""
	case FieldExpectedOutput:
		return c.ExpectedOutput, c.ExpectedOutput != ""
	case FieldContext:
		return listText(c.Context)
	case FieldRetrievalContext:
		return listText(c.RetrievalContext)
	case FieldToolsCalled:
		return toolsText(c.ToolsCalled)
	case FieldExpectedTools:
		return toolsText(c.ExpectedTools)
	case FieldTurns:
		return TurnsText(c.Turns)
	case FieldScenario:
		return c.Scenario, c.Scenario != ""
	case FieldExpectedOutcome:
		return c.ExpectedOutcome, c.ExpectedOutcome != ""
	case FieldChatbotRole:
		return c.ChatbotRole, c.ChatbotRole != ""
	case FieldLastUserTurn:
		return lastTurn(c.Turns, RoleUser)
	case FieldLastAssistantTurn:
		return lastTurn(c.Turns, RoleAssistant)
	}
	raw, ok := c.Extra[field]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) == nil {
		return compact.String(), true
	}
	return string(raw), true
}

// Missing returns the fields of want that the case lacks, in order.
func (c *TestCase) Missing(want []string) []string {
	var missing []string
	for _, f := range want {
		if !c.Has(f) {
			missing = append(missing, f)
		}
	}
	return missing
}

// listText joins a list one item a line; a list of empty strings is absent.
func listText(items []string) (string, bool) {
	text := strings.Join(items, "\n")
	if strings.TrimSpace(text) == "" {
		return "", false
	}
	return text, true
}

// lastTurn is the content of the last turn of role with any content.
func lastTurn(turns []Turn, role string) (string, bool) {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role == role && turns[i].Content != "" {
			return turns[i].Content, true
		}
	}
	return "", false
}

// TurnsText renders turns as prompt text: compact JSON without HTML
// escaping, as tools_called is, so every guest language renders a
// conversation the same way (v1/README.md §8). ok is false for no turns.
func TurnsText(turns []Turn) (string, bool) {
	if len(turns) == 0 {
		return "", false
	}
	return compactJSON(turns)
}

// toolsText renders tool calls as compact JSON, without HTML escaping: the
// text goes into a prompt, where \u003c would only confuse the judge.
func toolsText(calls []ToolCall) (string, bool) {
	if len(calls) == 0 {
		return "", false
	}
	return compactJSON(calls)
}

func compactJSON(v any) (string, bool) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", false
	}
	return strings.TrimSuffix(b.String(), "\n"), true
}

// FieldTitle is the heading a prompt uses for a field: "Actual Output".
func FieldTitle(field string) string {
	parts := strings.Split(field, "_")
	for i, p := range parts {
		if r, size := utf8.DecodeRuneInString(p); size > 0 {
			parts[i] = string(unicode.ToUpper(r)) + p[size:]
		}
	}
	return strings.Join(parts, " ")
}

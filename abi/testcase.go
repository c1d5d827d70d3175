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
)

// StandardFields lists the standard fields in their canonical order.
var StandardFields = []string{
	FieldInput, FieldActualOutput, FieldExpectedOutput, FieldContext,
	FieldRetrievalContext, FieldToolsCalled, FieldExpectedTools,
}

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
	// Extra holds free-form fields by name, as they were in the dataset.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// ToolCall is a tool an agent called (or was expected to call).
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

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

// toolsText renders tool calls as compact JSON, without HTML escaping: the
// text goes into a prompt, where \u003c would only confuse the judge.
func toolsText(calls []ToolCall) (string, bool) {
	if len(calls) == 0 {
		return "", false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(calls); err != nil {
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

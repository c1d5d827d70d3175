// Package abijson appends the ABI's messages and the types the host's
// files share with them (abi.TestCase, abi.Error) byte for byte as
// encoding/json's Marshal writes them, for the hot paths that write them
// by hand: the results writer, the Wasm transport's requests. Each
// function handles the common shape and reports false for what it leaves
// to encoding/json; abijson_test.go fuzzes every one against Marshal and
// fails when a field is added to a type it writes.
package abijson

import (
	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonw"
)

// AppendTestCase appends c as json.Marshal writes it, or reports false for
// what it leaves to encoding/json: tool calls and extra fields.
func AppendTestCase(b []byte, c *abi.TestCase) ([]byte, bool) {
	if c.ToolsCalled != nil || c.ExpectedTools != nil || c.Extra != nil {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = jsonw.AppendString(b, c.ID)
	b = AppendOptString(b, `,"input":`, c.Input)
	b = AppendOptString(b, `,"actual_output":`, c.ActualOutput)
	b = AppendOptString(b, `,"expected_output":`, c.ExpectedOutput)
	b = appendOptStrings(b, `,"context":`, c.Context)
	b = appendOptStrings(b, `,"retrieval_context":`, c.RetrievalContext)
	return append(b, '}'), true
}

// AppendError appends e as json.Marshal writes it.
func AppendError(b []byte, e *abi.Error) []byte {
	b = append(b, `{"code":`...)
	b = jsonw.AppendString(b, string(e.Code))
	b = append(b, `,"message":`...)
	b = jsonw.AppendString(b, e.Message)
	b = AppendOptString(b, `,"plugin":`, e.Plugin)
	b = AppendOptString(b, `,"digest":`, e.Digest)
	b = AppendOptString(b, `,"field":`, e.Field)
	b = AppendOptString(b, `,"stderr":`, e.Stderr)
	if e.Retryable {
		b = append(b, `,"retryable":true`...)
	}
	return append(b, '}')
}

// AppendOptString appends key and s unless s is empty (omitempty).
func AppendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonw.AppendString(append(b, key...), s)
}

// appendOptStrings appends key and ss unless ss is empty (omitempty).
func appendOptStrings(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(append(b, key...), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendString(b, s)
	}
	return append(b, ']')
}

// AppendMeasureRequest appends r as json.Marshal writes it, with config
// and prepared in place of r.Config and r.Prepared: what json.Marshal
// writes of those (nil when they are empty, and omitted), which callers
// that send one metric's request many times work out once. It reports
// false for what it leaves to encoding/json: a threshold encoding/json
// refuses, a case with tool calls or extra fields.
func AppendMeasureRequest(b []byte, r *abi.MeasureRequest, config, prepared []byte) ([]byte, bool) {
	if !jsonw.Finite(r.Threshold) {
		return b, false
	}
	b = append(b, `{"kind":`...)
	b = jsonw.AppendString(b, r.Kind)
	b = append(b, `,"metric":`...)
	b = jsonw.AppendString(b, r.Metric)
	if len(config) > 0 {
		b = append(append(b, `,"config":`...), config...)
	}
	if len(prepared) > 0 {
		b = append(append(b, `,"prepared":`...), prepared...)
	}
	b = append(b, `,"threshold":`...)
	b = jsonw.AppendFloat(b, r.Threshold)
	b = AppendOptString(b, `,"judge_model":`, r.JudgeModel)
	b = append(b, `,"case":`...)
	b, ok := AppendTestCase(b, &r.Case)
	if !ok {
		return b, false
	}
	return append(b, '}'), true
}

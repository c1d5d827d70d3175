//go:build wasip1

// Command oldcase is a guest of ABI minor 3 as its authors wrote it before
// minor 4 added the conversational fields: its test case is the minor-3
// TestCase, frozen here, decoded by encoding/json as the Go SDK of minor 3
// fell back to. Its kind "seen" answers with the fields it read, so a test
// sees that a conversational case costs an old guest nothing but the
// fields it never knew.
package main

import (
	"encoding/json"

	"github.com/extism/go-pdk"
)

type toolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// testCase3 is abi.TestCase as released in minor 3.
type testCase3 struct {
	ID               string                     `json:"id"`
	Input            string                     `json:"input,omitempty"`
	ActualOutput     string                     `json:"actual_output,omitempty"`
	ExpectedOutput   string                     `json:"expected_output,omitempty"`
	Context          []string                   `json:"context,omitempty"`
	RetrievalContext []string                   `json:"retrieval_context,omitempty"`
	ToolsCalled      []toolCall                 `json:"tools_called,omitempty"`
	ExpectedTools    []toolCall                 `json:"expected_tools,omitempty"`
	Extra            map[string]json.RawMessage `json:"extra,omitempty"`
}

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"oldcase","version":"1.0.0","abi_major":1,"abi_minor":3,"kinds":[{"name":"seen","role":"metric"}]}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	var req struct {
		Case testCase3 `json:"case"`
	}
	if err := json.Unmarshal(pdk.Input(), &req); err != nil {
		pdk.OutputString(`{"error":{"code":"invalid_input","message":` + quote(err.Error()) + `}}`)
		return 0
	}
	if req.Case.ActualOutput == "" {
		pdk.OutputString(`{"error":{"code":"missing_field","field":"actual_output","message":"case has no actual_output"}}`)
		return 0
	}
	details, _ := json.Marshal(req.Case)
	pdk.OutputString(`{"score":1,"threshold":0.5,"success":true,"details":` + string(details) + `}`)
	return 0
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func main() {}

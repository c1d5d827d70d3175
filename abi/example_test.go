package abi_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentanvil/anvil/abi"
)

// A kind renders the fields it needs as prompt sections: strings as they
// are, lists one item a line, tool calls and free-form values as compact
// JSON. Missing reports what a case lacks before any judge call is made.
func ExampleTestCase_Field() {
	c := abi.TestCase{
		ID:               "refund-042",
		Input:            "Can I get a refund?",
		RetrievalContext: []string{"Refunds within 30 days.", "Exchanges within 90 days."},
		ToolsCalled: []abi.ToolCall{
			{Name: "create_refund", Arguments: json.RawMessage(`{"order_id":"o-5521"}`)},
		},
		Extra: map[string]json.RawMessage{
			"customer_tier": json.RawMessage(`"gold"`),
			"attempts":      json.RawMessage(`3`),
		},
	}
	for _, f := range []string{abi.FieldInput, abi.FieldRetrievalContext, abi.FieldToolsCalled, "customer_tier", "attempts"} {
		text, _ := c.Field(f)
		fmt.Printf("%s:\n%s\n", abi.FieldTitle(f), text)
	}
	fmt.Println(c.Missing([]string{abi.FieldInput, abi.FieldExpectedOutput, "locale"}))
	// Output:
	// Input:
	// Can I get a refund?
	// Retrieval Context:
	// Refunds within 30 days.
	// Exchanges within 90 days.
	// Tools Called:
	// [{"name":"create_refund","arguments":{"order_id":"o-5521"}}]
	// Customer Tier:
	// gold
	// Attempts:
	// 3
	// [expected_output locale]
}

package anviltest_test

import (
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/anviltest"
)

// In a _test.go file: every case that fails a gated metric of anvil.yaml
// fails the test, with the metric's score, threshold and reason.
func ExampleAssert() {
	_ = func(t *testing.T) {
		anviltest.Assert(t, "anvil.yaml",
			abi.TestCase{ID: "capital-au", Input: "What is the capital of Australia?",
				ActualOutput: "Canberra.", ExpectedOutput: "Canberra"},
		)
	}
}

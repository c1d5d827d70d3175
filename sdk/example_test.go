package sdk_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Config is the kind's configuration: its JSON Schema, in the descriptor,
// is reflected from the struct.
type Config struct {
	IgnoreCase bool `json:"ignore_case,omitempty"`
}

// A deterministic metric kind, written once: link it in-process, build it
// to Wasm with sdk/guest, or serve it as a native plugin with sdk/native.
// The kind returns a score; the host decides pass or fail.
func ExampleMetricKind() {
	p := &sdk.Plugin{Name: "mine", Version: "0.1.0", Kinds: []sdk.Kind{
		&sdk.MetricKind[Config]{Name: "same_answer", RequiredFields: []string{abi.FieldActualOutput, abi.FieldExpectedOutput},
			Measure: func(_ context.Context, _ sdk.Host, c *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
				got, want := req.Case.ActualOutput, req.Case.ExpectedOutput
				if c.IgnoreCase {
					got, want = strings.ToLower(got), strings.ToLower(want)
				}
				s := 0.0
				if got == want {
					s = 1
				}
				return &abi.MeasureResult{Score: &s, Reason: fmt.Sprintf("%q vs %q", got, want)}, nil
			}},
	}}
	fmt.Println(p.Describe().Kinds[0].Name, p.Describe().Kinds[0].RequiredFields)

	res := p.Measure(context.Background(), nil, &abi.MeasureRequest{
		Kind: "same_answer", Config: []byte(`{"ignore_case": true}`),
		Case: abi.TestCase{ActualOutput: "Paris", ExpectedOutput: "paris"},
	})
	fmt.Println(*res.Score, res.Reason)

	res = p.Measure(context.Background(), nil, &abi.MeasureRequest{
		Kind: "same_answer", Config: []byte(`{"ignore_cases": true}`),
		Case: abi.TestCase{ActualOutput: "Paris", ExpectedOutput: "paris"},
	})
	fmt.Println(res.Error.Code, strings.Contains(res.Error.Message, "ignore_cases"))
	// Output:
	// same_answer [actual_output expected_output]
	// 1 "paris" vs "paris"
	// invalid_config true
}

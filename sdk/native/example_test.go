package native_test

import (
	"context"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/native"
)

// The main of a native (process-transport) plugin: build it with
// `go build -trimpath`, pin its sha256 in the config with
// `transport: process`. Serve never returns; the host starts the binary in
// its sandbox and talks to it over go-plugin's gRPC.
func ExampleServe() {
	native.Serve(&sdk.Plugin{Name: "mine", Version: "0.1.0", Kinds: []sdk.Kind{
		&sdk.MetricKind[struct{}]{Name: "non_empty", RequiredFields: []string{abi.FieldActualOutput},
			Measure: func(_ context.Context, _ sdk.Host, _ *struct{}, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
				s := 0.0
				if req.Case.ActualOutput != "" {
					s = 1
				}
				return &abi.MeasureResult{Score: &s}, nil
			}},
	}})
}

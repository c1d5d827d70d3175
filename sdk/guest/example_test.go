//go:build wasip1

package guest_test

import (
	"context"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/guest"
)

// The init of a Wasm plugin's main package (built with GOOS=wasip1
// GOARCH=wasm go build -buildmode=c-shared): Serve registers the plugin
// behind the module's exports; main stays empty.
func ExampleServe() {
	guest.Serve(&sdk.Plugin{Name: "mine", Version: "0.1.0", Kinds: []sdk.Kind{
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

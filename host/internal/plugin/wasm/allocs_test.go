package wasm

import (
	"context"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// maxAllocsPerWasmMeasure is the allocation budget of one trivial Wasm
// metric call through the pool (request encoding, the call, strict
// decoding of the result, the guard). It counts allocations, not time, so
// it holds on a loaded machine; raise it only with a reason in the commit.
// For scale: 186 before the Extism patches and the strict decoder's fast
// path (bench/README.md, "Wasm path"), 42–45 after, 35–38 after the
// request encoder, 29–32 since a call's name is formatted only for an
// error and Extism's per-call debug line only when logged, 25–26 since
// DecodeStrict decoded a result by hand (decodeMeasureResult); 35–44
// since the request is encoded and the result checked and decoded by
// go-json-experiment (its decoder's name tables; no hand codec left); 3
// more for the invocation's clock (transport.Clock); 0 is out of reach
// (the request and the result are built per call).
const maxAllocsPerWasmMeasure = 49

// TestWasmMeasureAllocBudget is the CI check that the per-call
// allocations of the Wasm path stay within budget.
func TestWasmMeasureAllocBudget(t *testing.T) {
	if plugintest.RaceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	p := load(t, "textcheck", transport.Options{})
	for _, tc := range append(plugintest.ExactMatchRequests(), plugintest.NamedRequest{Name: "the harness's case (1.2 KB, direct I/O)", Req: plugintest.BenchCase}) {
		t.Run(tc.Name, func(t *testing.T) {
			plugintest.AllocBudget(t, "one Wasm measure call", maxAllocsPerWasmMeasure, func() {
				if _, err := p.Measure(ctx, nil, tc.Req); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

package wasm

import (
	"context"
	"runtime"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// maxRetainedHeapGoGuest bounds the host heap a loaded Go guest
// (textcheck, 4.7 MB of Wasm) keeps while its instance is warm: wazero's
// decoded module, the engine's tables, the instance, Extism's kernel. The
// garbage collector lets the heap grow to twice what is live, so every
// MiB here is two of the Wasm run's peak RSS. The metering rewrite joins a
// Go guest's tens of thousands of data segments into a few (wazero keeps
// each as an allocation of its own); upstream wazero also keeps a compiled
// module's function bodies, which is most of the rest (docs/RATIONALE.md,
// "Why does the host run on upstream wazero and go-sdk, unpatched?").
const maxRetainedHeapGoGuest = 10 << 20

// TestLoadedGoGuestRetainsLittleHeap is the CI check on that bound. It
// counts live bytes after a collection, not time, so it holds on a loaded
// machine.
func TestLoadedGoGuestRetainsLittleHeap(t *testing.T) {
	if plugintest.RaceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := live()
	p := load(t, "textcheck", transport.Options{})
	req := &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
		Case: abi.TestCase{ID: "c1", ActualOutput: "Paris", ExpectedOutput: "Paris"}}
	if _, err := p.Measure(context.Background(), nil, req); err != nil {
		t.Fatal(err)
	}
	after := live()
	retained := int64(after) - int64(before)
	t.Logf("a loaded textcheck with a warm instance keeps %.1f MiB of host heap (bound %.1f MiB)",
		float64(retained)/(1<<20), float64(maxRetainedHeapGoGuest)/(1<<20))
	if retained > maxRetainedHeapGoGuest {
		t.Errorf("a loaded textcheck keeps %.1f MiB of host heap, over the bound of %.1f MiB",
			float64(retained)/(1<<20), float64(maxRetainedHeapGoGuest)/(1<<20))
	}
	runtime.KeepAlive(p)
}

package wasm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/internal/testkit"
)

// TestGoGuestHeapStaysBoundedOverLargeCalls: a Go guest (textcheck, built
// with sdk/guest) measuring 64 KiB requests for thousands of calls on one
// instance keeps its heap bounded. Before the SDK yielded to the Go
// runtime at the end of each export, the collector's background workers
// never ran in the reactor and the heap grew until, with 64 MiB of linear
// memory, the guest ran out of it at call 5,674 ("cannot allocate
// 524288-byte block (62259200 in use)").
func TestGoGuestHeapStaysBoundedOverLargeCalls(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	if plugintest.RaceEnabled {
		t.Skip("10,000 guest calls take minutes under the race detector; the guest's heap does not depend on it")
	}
	ctx := context.Background()
	p := load(t, "textcheck", transport.Options{Limits: transport.Limits{Timeout: duration.Duration(20 * time.Second),
		MemoryPages: 1024, MaxOutputBytes: 64 << 10, PoolSize: 1}}).(*wasmPlugin)
	const calls = 12_000
	half := strings.Repeat("a", 32<<10)
	req := &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
		Case: abi.TestCase{ID: "c1", ActualOutput: half, ExpectedOutput: half}}
	for i := range calls {
		res, err := p.Measure(ctx, nil, req)
		if err != nil || res.Score == nil || *res.Score != 1 {
			t.Fatalf("call %d: %v / %+v", i, err, res)
		}
	}
	if n := p.instances.Load(); n != 1 {
		t.Errorf("%d instances made for %d healthy calls; want 1", n, calls)
	}
}

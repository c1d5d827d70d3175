package wasm

import (
	"context"
	"fmt"

	extism "github.com/extism/go-sdk"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/host/internal/wasmmeter"
)

// Termination. wazero stops a guest only at loop headers, and only with
// close-on-context-done; Go cannot preempt a goroutine running compiled
// guest code, so a garbage collection's stop-the-world waits for it. Code
// without loops (call trees, straight-line bodies, bulk memory at the
// leaves) was therefore never stopped, and froze the host when a GC
// started. So every module is rewritten when it is loaded
// (host/internal/wasmmeter): it counts its own work in a fuel counter and,
// each time meterSlice units are spent, calls yield here. yield is Go:
// while the guest is in it a stop-the-world can proceed, and it ends the
// call when the call's context is done or its max_fuel is spent. A guest
// of any shape therefore returns to the host every meterSlice units of
// work, and the cost of a check is a counter decrement in the guest's own
// code.
//
// The counter is the guest's; the account is the host's. enter starts an
// export call with a fresh slice, yield and leave add what the guest spent
// of the slice it was handed. Nothing the guest controls sets the
// account: the counter is a global the guest's own code cannot name (the
// rewrite refuses a module whose code names an index it did not declare).

// meterSlice is the fuel a guest spends between two returns to the host.
// It is a trade: each return costs a host call, and a stop-the-world or a
// passed deadline waits up to one slice of guest work.
const meterSlice = 1 << 20

// meter is the fuel account of one invocation.
type meter struct {
	max  uint64 // 0: unlimited
	used uint64
	// granted is the counter the guest was last handed.
	granted int64
	// outer are the counters of the export calls this one interrupted.
	outer []int64
}

// spend adds what the guest spent since it was handed granted, its
// counter now being remaining.
func (m *meter) spend(remaining int64) {
	if d := m.granted - remaining; d > 0 {
		m.used += uint64(d)
	}
}

// slice is the counter to hand the guest next.
func (m *meter) slice() int64 {
	if m.max == 0 {
		return meterSlice
	}
	if m.used >= m.max {
		return 0
	}
	return int64(min(meterSlice, m.max-m.used))
}

// exhausted reports whether the guest has spent more than max_fuel.
func (m *meter) exhausted() bool { return m.max != 0 && m.used > m.max }

// meterFunctions are the host functions the metering rewrite calls.
func (w *wasmPlugin) meterFunctions() []extism.HostFunction {
	i64s := []extism.ValueType{extism.ValueTypeI64}
	fns := []extism.HostFunction{
		extism.NewHostFunctionWithStack(wasmmeter.EnterName, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			m := meterOf(ctx)
			if m == nil {
				unaccounted(ctx, stack)
				return
			}
			outer := int64(stack[0])
			if len(m.outer) > 0 {
				m.spend(outer) // an export called while another runs
			}
			m.outer = append(m.outer, outer)
			stopIfDone(ctx)
			m.granted = m.slice()
			stack[0] = uint64(m.granted)
		}, i64s, i64s),
		extism.NewHostFunctionWithStack(wasmmeter.YieldName, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			m := meterOf(ctx)
			if m == nil {
				unaccounted(ctx, stack)
				return
			}
			m.spend(int64(stack[0]))
			stopIfDone(ctx)
			if m.exhausted() {
				bounds{}.refuse(ctx, abi.Errorf(abi.CodeFuelExhausted, "spent its max_fuel of %d", m.max))
			}
			m.granted = m.slice()
			stack[0] = uint64(m.granted)
		}, i64s, i64s),
		extism.NewHostFunctionWithStack(wasmmeter.LeaveName, func(ctx context.Context, _ *extism.CurrentPlugin, stack []uint64) {
			m := meterOf(ctx)
			if m == nil || len(m.outer) == 0 {
				return // the counter goes back as it came
			}
			m.spend(int64(stack[0]))
			outer := m.outer[len(m.outer)-1]
			m.outer = m.outer[:len(m.outer)-1]
			m.granted = outer
			stack[0] = uint64(outer)
			if m.exhausted() {
				bounds{}.refuse(ctx, abi.Errorf(abi.CodeFuelExhausted, "spent its max_fuel of %d", m.max))
			}
		}, i64s, i64s),
	}
	for i := range fns {
		fns[i].SetNamespace(wasmmeter.ImportModule)
	}
	return fns
}

// meterOf is the account of the invocation ctx belongs to; nil outside
// one (an instance's start function, run while it is instantiated).
func meterOf(ctx context.Context) *meter {
	if st, ok := ctx.Value(callStateKey{}).(*callState); ok {
		return &st.meter
	}
	return nil
}

// unaccounted answers enter or yield outside an invocation (an
// instance's start function): only the context bounds it.
func unaccounted(ctx context.Context, stack []uint64) {
	stopIfDone(ctx)
	stack[0] = meterSlice
}

// stopIfDone ends the Wasm call underway when its context is done. The
// panic unwinds the guest's stack; wazero returns it as the call's error,
// and the host reads the context to name it a timeout (classify).
func stopIfDone(ctx context.Context) {
	if err := ctx.Err(); err != nil {
		panic(fmt.Errorf("stopped by the host: %w", err))
	}
}

// instrument rewrites a verified module for the sandbox: metered, its
// kernel imports sent to kernelModule, and its tables counted in its
// memory budget.
func instrument(wasm []byte, l transport.Limits) ([]byte, error) {
	return wasmmeter.Instrument(wasm, wasmmeter.Options{
		MemoryBudget: uint64(l.MemoryPages) << 16,
		Redirect:     kernelRedirects(),
	})
}

//go:build wasip1

package guest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"

	"github.com/extism/go-pdk"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// served is the plugin this module exports. A Wasm module is one plugin, so
// a package variable is the module's identity, not hidden shared state.
var served *sdk.Plugin

// Serve registers p as the plugin this module exports. Call it once, from
// an init function: the host may call anvil_describe before main would run.
func Serve(p *sdk.Plugin) {
	if p == nil {
		panic("guest.Serve: nil plugin")
	}
	if served != nil {
		panic("guest.Serve: called twice (a module exports exactly one plugin)")
	}
	served = p
}

// abiV1 is the marker export: its presence is how a host learns the guest
// speaks ABI major 1 before running any of its code.
//
//go:wasmexport anvil_abi_v1
func abiV1() {}

//go:wasmexport anvil_describe
func describe() int32 {
	defer yieldToRuntime()
	ioDirect = false // no request: the host reads the answer from Extism's output
	p, err := plugin()
	if err != nil {
		return misuse(err)
	}
	return respond(p.Describe())
}

//go:wasmexport anvil_prepare
func prepare() int32 {
	defer yieldToRuntime()
	p, err := plugin()
	if err != nil {
		return misuse(err)
	}
	var req abi.PrepareRequest
	if err := decode(&req); err != nil {
		return misuse(err)
	}
	return respond(p.Prepare(context.Background(), wasmHost{}, &req))
}

//go:wasmexport anvil_measure
func measure() int32 {
	defer yieldToRuntime()
	p, err := plugin()
	if err != nil {
		return misuse(err)
	}
	in, err := input()
	if err != nil {
		return misuse(err)
	}
	var req abi.MeasureRequest
	if err := decodeMeasureRequest(in, &req); err != nil {
		return misuse(fmt.Errorf("decode request: %w", err))
	}
	b, err := encodeMeasureResult(p.Measure(context.Background(), wasmHost{}, &req))
	if err != nil {
		return misuse(fmt.Errorf("encode result: %w", err))
	}
	output(b)
	return 0
}

//go:wasmexport anvil_node
func node() int32 {
	defer yieldToRuntime()
	p, err := plugin()
	if err != nil {
		return misuse(err)
	}
	var req abi.NodeRequest
	if err := decode(&req); err != nil {
		return misuse(err)
	}
	return respond(p.Node(context.Background(), wasmHost{}, &req))
}

func plugin() (*sdk.Plugin, error) {
	if served == nil {
		return nil, errors.New("no plugin registered: call guest.Serve from an init function")
	}
	return served, nil
}

// decode reads the request JSON (input).
func decode(v any) error {
	in, err := input()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	return nil
}

// respond writes the result JSON (output). The context passed
// to kinds carries no deadline: the host enforces the wall-clock limit by
// stopping the instance, which the guest cannot observe or delay.
func respond(v any) int32 {
	b, err := json.Marshal(v)
	if err != nil {
		return misuse(fmt.Errorf("encode result: %w", err))
	}
	output(b)
	return 0
}

// misuse reports an ABI violation: the host discards this instance.
func misuse(err error) int32 {
	pdk.SetError(err)
	return 1
}

// yieldToRuntime lets the Go runtime's own goroutines run before an export
// returns. A reactor's export never blocks, so without it the garbage
// collector's background sweeper and mark workers never get the processor:
// a guest allocating large buffers (a 64 KiB request) grew its heap by
// ≈ 10 KB a call until it ran out of linear memory after a few thousand
// calls (TestGoGuestHeapStaysBoundedOverLargeCalls).
func yieldToRuntime() { runtime.Gosched() }

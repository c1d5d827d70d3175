package wasm

import (
	"context"
	"fmt"
	"slices"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentanvil/anvil/abi"
)

// Extism's host side copies whole memory blocks out of an instance before
// anyone can look at their size: the export's output and error message
// (Plugin.CallWithContext), and the inputs of its own host functions
// (log_*, config_get, var_get, http_request). A guest sets those sizes —
// through output_set and error_set, or by writing Extism's block table
// directly with store_u64 — so they are bounded only by the instance's
// memory. The go-sdk offers no hook, and its kernel and modules are not
// reachable from outside, so the host watches the functions concerned with
// a wazero function listener, installed when the plugin is compiled:
//
//   - after the kernel's output_length and error_get answer, the size is
//     checked against max_output_bytes before Extism reads the block;
//   - before Extism's log_*, config_get and var_get read their argument
//     block, its size is checked the same way;
//   - http_request is refused before anything is read: the sandbox has no
//     network.
//
// A refusal is recorded in the call's callState, which call() reports as
// the error (output_too_large, or a trap for http_request), and then
// panics, which wazero turns into an error of the Wasm call underway, so
// Extism returns without copying. The kernel functions are recognised by
// export name and signature; a guest exporting its own function of that
// name and type only bounds its own calls to it.

// envModule is the Extism host module guest modules import.
const envModule = "extism:host/env"

// callState is what the bounds learned during one export call.
type callState struct {
	maxBytes int
	refused  *abi.Error
	// meter is the invocation's fuel account (meter.go).
	meter meter
	// inst is the instance called; the kernel functions (kernel.go) keep
	// its state there.
	inst *instance
}

type callStateKey struct{}

func withCallState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, st)
}

// bounds is the listener factory. maxBytes applies when a call carries
// no callState (there is always one; the bound must not depend on it).
type bounds struct{ maxBytes int }

var _ experimental.FunctionListenerFactory = bounds{}

func (b bounds) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	i64 := api.ValueTypeI64
	is := func(params, results []api.ValueType) bool {
		return slices.Equal(def.ParamTypes(), params) && slices.Equal(def.ResultTypes(), results)
	}
	if def.ModuleName() == envModule {
		switch def.Name() {
		case "log_trace", "log_debug", "log_info", "log_warn", "log_error", "config_get", "var_get":
			return blockArg{bounds: b}
		case "http_request":
			return noNetwork{bounds: b}
		}
		return nil
	}
	if def.ModuleName() == abortModule && def.Name() == abortName {
		return abortListener{bounds: b}
	}
	if def.GoFunction() != nil {
		return nil
	}
	for _, name := range def.ExportNames() {
		switch {
		case name == abi.ExportDescribe:
			return bindInstance{}
		case name == "output_length" && is(nil, []api.ValueType{i64}):
			return outputLength{bounds: b}
		case name == "error_get" && is(nil, []api.ValueType{i64}):
			return errorGet{bounds: b}
		}
	}
	return nil
}

// refuse records e for the call and aborts the function underway; it
// does not return.
func (b bounds) refuse(ctx context.Context, e *abi.Error) {
	if st, ok := ctx.Value(callStateKey{}).(*callState); ok && st.refused == nil {
		st.refused = e
	}
	panic(e)
}

func (b bounds) limit(ctx context.Context) int {
	if st, ok := ctx.Value(callStateKey{}).(*callState); ok {
		return st.maxBytes
	}
	return b.maxBytes
}

// checkBlock refuses a block of the kernel larger than the limit.
func (b bounds) checkBlock(ctx context.Context, kernel api.Module, off uint64, what string) {
	if off == 0 || kernel == nil {
		return
	}
	length := kernel.ExportedFunction("length")
	if length == nil {
		b.refuse(ctx, abi.Errorf(abi.CodeABI, "%s: Extism kernel has no length function", what))
	}
	n, err := length.Call(ctx, off)
	if err != nil || len(n) != 1 {
		b.refuse(ctx, abi.Errorf(abi.CodeABI, "%s: bad memory block %d", what, off))
	}
	if max := b.limit(ctx); n[0] > uint64(max) {
		b.refuse(ctx, abi.Errorf(abi.CodeOutputTooLarge, "%s is %d bytes, max_output_bytes is %d", what, n[0], max))
	}
}

// listener has the methods a bound does not use.
type listener struct{}

func (listener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
}
func (listener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (listener) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}

type outputLength struct {
	bounds
	listener
}

func (l outputLength) After(ctx context.Context, _ api.Module, _ api.FunctionDefinition, results []uint64) {
	if max := l.limit(ctx); len(results) == 1 && results[0] > uint64(max) {
		l.refuse(ctx, abi.Errorf(abi.CodeOutputTooLarge, "output is %d bytes, max_output_bytes is %d", results[0], max))
	}
}

type errorGet struct {
	bounds
	listener
}

func (l errorGet) After(ctx context.Context, kernel api.Module, _ api.FunctionDefinition, results []uint64) {
	if len(results) == 1 {
		l.checkBlock(ctx, kernel, results[0], "error message")
	}
}

// blockArg bounds an Extism host function whose first argument is a block
// it reads whole.
type blockArg struct {
	bounds
	listener
}

func (l blockArg) Before(ctx context.Context, _ api.Module, def api.FunctionDefinition, params []uint64, _ experimental.StackIterator) {
	kernel, _ := ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
	if len(params) > 0 {
		l.checkBlock(ctx, kernel, params[0], fmt.Sprintf("the argument of %s.%s", envModule, def.Name()))
	}
}

type noNetwork struct {
	bounds
	listener
}

func (l noNetwork) Before(ctx context.Context, _ api.Module, def api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	l.refuse(ctx, abi.Errorf(abi.CodeTrap, "%s.%s: the sandbox has no network", envModule, def.Name()))
}

// bindInstance hands the instance being described the module that runs
// its code and its Extism kernel. go-sdk keeps both to itself; the host
// needs them to write a direct-I/O request into the guest's memory and to
// call an export with arguments (directio.go). anvil_describe is the
// first export the host calls on every instance.
type bindInstance struct{ listener }

func (bindInstance) Before(ctx context.Context, guest api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	st, ok := ctx.Value(callStateKey{}).(*callState)
	if !ok || st.inst == nil || st.inst.guest != nil {
		return
	}
	st.inst.guest = guest
	_ = st.inst.kernel.bind(ctx)
}

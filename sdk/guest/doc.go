// Package guest turns an sdk.Plugin into a WebAssembly module that speaks
// Anvil's ABI v1 through Extism. It is the only Wasm-specific code a Go
// plugin author touches:
//
//	//go:build wasip1
//
//	package main
//
//	import (
//		"github.com/agentanvil/anvil/sdk"
//		"github.com/agentanvil/anvil/sdk/guest"
//	)
//
//	func init() { guest.Serve(&sdk.Plugin{Name: "mine", Version: "1.0.0", Kinds: ...}) }
//
//	func main() {}
//
// built with
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o mine.wasm .
//
// The package exists on every platform so that documentation and tooling
// see it, but Serve and the exports are compiled only for GOOS=wasip1.
//
// # Exports
//
// The module exports anvil_abi_v1 (a marker: never called, its presence
// says "ABI major 1"), anvil_describe, anvil_prepare, anvil_measure and
// anvil_node. Each call-able export takes its JSON request from the Extism
// input (pdk.Input), writes its JSON result to the Extism output
// (pdk.Output) and returns 0.
//
// It also exports anvil_io (ABI minor 3, abi/v1/README.md §4.1): a host
// that calls it writes each request into a buffer in the module's linear
// memory and reads the result from there, one copy each way instead of
// Extism's host call per 8 bytes; a host that does not gets the Extism
// way above.
//
// # Error conventions
//
// There are three ways a call can end, and they mean different things to
// the host:
//
//   - Return 0 with a result whose Error is set: the kind could not score
//     this case (metric error, invalid config, missing field, denied
//     capability, spent budget). The instance is healthy and reused.
//   - Return non-zero after pdk.SetError: the ABI itself was misused — the
//     request did not decode, no plugin was registered, the result did not
//     encode. The host reports abi_violation and discards the instance.
//   - Trap: a panic in a kind is deliberately not recovered. The Go runtime
//     prints it to stderr and exits; the host captures that stderr, reports
//     a trap and discards the instance, because a Go runtime that panicked
//     half-way through a call is in an unknown state.
//
// # Memory conventions for host functions
//
// The host functions live in the Extism namespace extism:host/user and
// exchange JSON through Extism memory blocks, never through guest linear
// memory:
//
//	anvil_judge(request i64) -> response i64   // abi.JudgeBatch -> abi.JudgeBatchResult
//	anvil_log(record i64)                      // abi.LogRecord
//
// The guest allocates the request block (pdk.AllocateBytes), passes its
// offset and frees it when the call returns; the host never frees a block
// it did not allocate. The host allocates the response block; the guest
// reads it (pdk.FindMemory) and frees it. Every block is also reclaimed
// when the next export call starts, so a guest that forgets to free leaks
// only within one call. A batch-level refusal (capability not granted,
// budget spent, request too large) is a JudgeBatchResult with Error set,
// which Host.Judge returns as an *abi.Error with that code — never a trap.
//
// Every Go guest imports anvil_judge whether it judges or not; a host that
// has not granted the judge capability links a stub that only ever answers
// capability_denied.
package guest

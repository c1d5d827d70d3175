// Package wasm is the wasm transport: a plugin that is an Extism module
// run on wazero, sandboxed, one instance per concurrent call. A Runtime
// compiles each module once per digest into a shared compilation cache
// and keeps each plugin's warm instances in a pool.
//
// Invariants: nothing of a module is compiled before its size, digest,
// ABI marker, section shape and imports have been checked, and its
// compilation is bounded in time (compile_timeout); every module is
// metered when it is loaded (meter.go), so a deadline or max_fuel stops a
// guest of any shape and no garbage collection waits on one; the host
// copies no more than max_output_bytes out of guest memory (bounds.go);
// the guest's calls into its Extism kernel cannot corrupt it (kernel.go).
// A fault discards the instance; the guest reaches the host only through
// the transport.Guard of the call.
//
// A plugin may be announced before it is compiled (LoadDeferred: its
// descriptor remembered beside the compile cache, or read in wazero's
// interpreter, after the same checks); the compiled module's descriptor
// must then be the announced one byte for byte, or the plugin is refused.
package wasm

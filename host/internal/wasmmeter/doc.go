// Package wasmmeter rewrites an untrusted WebAssembly module at load time so
// that it meters its own work and calls back into the host regularly.
//
// wazero stops a guest only at loop headers, and only when asked to close on
// context cancellation, which makes every loop iteration leave native code.
// Code without loops (deep call trees, long straight-line bodies) and bulk
// memory operations are never interrupted, and Go cannot preempt a goroutine
// that runs compiled guest code, so a stop-the-world garbage collection waits
// on it. Instrument gives every module a fuel counter (a mutable i64 global
// it cannot name) and a call to the host whenever the counter drops below
// zero; the host decides there, in Go, whether the call's deadline or fuel
// budget is spent, and may panic to abort the call.
//
// # Invariants
//
//   - Instrument reads hostile input: every declared count is checked against
//     the bytes that remain before anything is allocated for it, LEB128
//     numbers are checked for length and overflow, and nesting, function,
//     local and body sizes are bounded. The output is at most
//     4×len(input)+64 KiB, and the work is linear in the input.
//   - Indices into the spaces the rewrite extends (types, functions, globals,
//     locals, element segments) are checked against the original module, so
//     a guest cannot name the fuel global, the meter imports, the export
//     wrappers or the scratch locals, even with a module that would have been
//     invalid before the rewrite.
//   - The rewrite does not change what a module computes: with enough fuel
//     the metered module returns the same results, traps the same way and
//     leaves the same memory. Inserted code leaves the operand stack as it
//     found it and is valid in unreachable code; it adds no branch targets
//     around original instructions, so label depths are unchanged.
//   - The cost model is deterministic: the same call on the same input uses
//     the same fuel.
//   - Only what wazero's default features (api.CoreFeaturesV2) accept is
//     rewritten; other proposals are refused with an error naming them.
//
// # Cost model
//
// Every original instruction costs one unit. Code is cut at charge points:
// function entry, the start of every loop body, after every end and else
// (where branches land) and after every call and call_indirect. At each
// charge point the module subtracts the number of original instructions up
// to the next charge point, an upper bound of what runs before it. Function
// entry, loop headers and the points after calls also compare the counter
// with zero and call yield when it is negative; the others only subtract,
// which keeps the cost low for Go guests whose code ends a block every few
// instructions. Between two checks a guest runs at most one function body's
// straight-line code.
//
// Operations whose work depends on an operand are charged for it just
// before they run, and checked: memory.fill, memory.copy and memory.init
// cost n/64+1 (n bytes), table.fill, table.copy, table.init and table.grow
// n+1 (n elements), memory.grow n*1024+1 (n pages).
//
// # Calling convention
//
// Every exported function is replaced in the export section by a wrapper
// that calls enter with the counter and runs with the counter enter returns,
// then calls leave with what remains and restores what leave returns. The
// host keeps one budget per call and can nest calls (a host function that
// calls back into the guest). The start function and functions reached
// through tables are not wrapped: they run with whatever counter is current,
// which at instantiation is zero, so the start function calls yield at once.
//
// With a memory budget, memory.grow and table.grow that would take linear
// memory bytes plus table elements times TableElementBytes past it return
// -1, as a grow may always do, and a module that declares more than the
// budget at its minimums is refused.
package wasmmeter

// Package extism is github.com/extism/go-sdk v1.7.1 (BSD-3-Clause, see
// LICENSE), copied unchanged but for the patches listed in PATCHES.md,
// which remove the per-call costs that made a trivial Wasm metric call cost
// ≈ 0.4 ms of host CPU. It is the host side of the Extism ABI that Anvil's
// Wasm plugins speak; guests keep using the upstream PDKs.
//
// Invariants the patches keep: a Plugin (one instance) is used by one
// goroutine at a time; guest code runs under the runtime config the caller
// gave (close-on-context-done included); the Extism kernel — Extism's own
// small, trusted module, whose every export returns in bounded time —
// runs in a second runtime with the same config and memory limit but
// without close-on-context-done.
package extism

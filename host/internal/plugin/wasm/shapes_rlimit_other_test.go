//go:build !unix

package wasm

// limitAddressSpace: no address space cap on this system.
func limitAddressSpace(uint64) {}

//go:build !unix

package plugin

// limitAddressSpace: no address space cap on this system.
func limitAddressSpace(uint64) {}

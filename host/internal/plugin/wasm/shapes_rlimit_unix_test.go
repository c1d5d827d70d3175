//go:build unix

package wasm

import (
	"fmt"
	"os"
	"syscall"
)

// limitAddressSpace caps the process's address space, so that a guest
// making the host allocate tens of GiB (a table of 2^31 elements, 300
// tables of 10M) makes this process fail to allocate and die, instead of
// taking the machine's memory. A hostile-shape child calls it first.
func limitAddressSpace(max uint64) {
	lim := syscall.Rlimit{Cur: max, Max: max}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "shape child: cannot cap the address space:", err)
	}
}

//go:build unix

package wasm

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory backs each Wasm linear memory (a guest's and its Extism
// kernel's) with one anonymous mapping of the memory's maximum size,
// reserved but not committed: pages become resident when the guest
// touches them, growing never copies, and the memory leaves the process
// when the instance closes.
//
// wazero's default is a Go []byte that grows by copying into a larger
// one. A Go guest grows its memory a page at a time as its heap grows, so
// every instance left a trail of dead copies of its whole memory for the
// host's garbage collector: with 4 instances the host's heap peaked at
// ≈ 200 MiB, most of it guest memory and its garbage (bench/README.md,
// "Wasm path").
//
// Safety: wazero frees a memory only when its module is closed and no call
// is running in it (a deadline closes the module but defers freeing the
// memory until the call has returned), and the host reads an instance's
// memory only during or right after its own call, never after closing it.
type linearMemory struct{}

// maxMapping bounds one reservation: wazero asks for the memory's maximum,
// which the runtime config caps at memory_pages (at most 4 GiB).
const maxMapping = 4 << 30

func (linearMemory) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max == 0 || max > maxMapping {
		return &heapMemory{}
	}
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		// No address space for it (a strict overcommit policy, a ulimit):
		// wazero's own way, a Go slice.
		return &heapMemory{}
	}
	return &mappedMemory{buf: b}
}

type mappedMemory struct{ buf []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

func (m *mappedMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}

// memoryAllocator is the allocator instances are created with.
func memoryAllocator() experimental.MemoryAllocator { return linearMemory{} }

// heapMemory is wazero's default behaviour, for when a mapping is refused:
// a Go slice that grows by copying. (wazero needs a LinearMemory from an
// allocator it was given; it has no fallback of its own.)
type heapMemory struct{ buf []byte }

func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		grown := make([]byte, size, max(size, 2*uint64(cap(m.buf))))
		copy(grown, m.buf)
		m.buf = grown
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *heapMemory) Free() { m.buf = nil }

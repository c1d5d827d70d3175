//go:build wasip1

package guest

import (
	"fmt"
	"unsafe"

	"github.com/extism/go-pdk"

	"github.com/agentanvil/anvil/abi"
)

// Direct I/O (ABI minor 3, abi/v1/README.md §4.1). Extism's input is read
// through the kernel one host call per 8 bytes, and the output written
// back the same way; under the host's termination check each such call
// costs the guest about as much as decoding the bytes it carries. A host
// of minor 3 asks anvil_io for a buffer in this module's linear memory,
// writes the request there and reads the answer from where ioBlock says;
// a host that never calls anvil_io gets the Extism way, unchanged.
//
// ioBlock is the control block the host reads and writes (six
// little-endian u32, which is how wasm lays out a [6]uint32): input
// buffer address, its size, the request's length, the state, the
// answer's address and length. It is a package variable so its address
// never changes (Go's collector does not move objects; neither do
// globals).
var ioBlock [6]uint32

const (
	ioInPtr, ioInCap, ioInLen, ioState, ioOutPtr, ioOutLen = 0, 1, 2, 3, 4, 5

	ioIdle    = 0
	ioRequest = 1 // the host wrote a request of ioInLen bytes at ioInPtr
	ioAnswer  = 2 // the answer is at ioOutPtr, ioOutLen

	// ioMinBuffer is the buffer's least size: most requests fit at once.
	ioMinBuffer = 4 << 10
	// ioKeepBuffer is the largest buffer kept between calls; a bigger one
	// (a request with a long context) is released after its call, so one
	// large case does not stay resident in every instance.
	ioKeepBuffer = 256 << 10
)

var (
	ioIn  []byte // the input buffer ioBlock points at
	ioOut []byte // the last answer, kept alive until the host copied it
	// ioDirect says this call's request came through ioIn, so its answer
	// goes to linear memory too.
	ioDirect bool
)

// anvilIO makes the input buffer hold at least size bytes and returns the
// control block's address. The host calls it once per instance and again
// when a request does not fit.
//
//go:wasmexport anvil_io
func anvilIO(size int32) int32 {
	if n := int(size); n > len(ioIn) || ioIn == nil {
		ioIn = make([]byte, max(n, ioMinBuffer))
	}
	ioBlock[ioInPtr] = addr(unsafe.Pointer(unsafe.SliceData(ioIn)))
	ioBlock[ioInCap] = uint32(len(ioIn))
	return int32(addr(unsafe.Pointer(&ioBlock)))
}

func addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

// input returns this call's request: from ioIn when the host wrote it
// there, else from Extism's input. The bytes of ioIn are reused by the
// next call; the decoders copy what they keep.
func input() ([]byte, error) {
	ioOut = nil
	ioDirect = false
	if ioBlock[ioState] != ioRequest {
		return pdk.Input(), nil
	}
	ioBlock[ioState] = ioIdle
	n := ioBlock[ioInLen]
	if uint64(n) > uint64(len(ioIn)) {
		return nil, fmt.Errorf("%s: the host's request of %d bytes overruns the %d-byte buffer", abi.ExportIO, n, len(ioIn))
	}
	ioDirect = true
	return ioIn[:n], nil
}

// output hands the host this call's answer, where input found the request.
func output(b []byte) {
	if len(ioIn) > ioKeepBuffer {
		// Released after this call; the next request grows it again.
		ioIn = nil
		ioBlock[ioInPtr], ioBlock[ioInCap] = 0, 0
	}
	if !ioDirect {
		pdk.Output(b)
		return
	}
	ioOut = b
	ioBlock[ioOutPtr] = addr(unsafe.Pointer(unsafe.SliceData(b)))
	ioBlock[ioOutLen] = uint32(len(b))
	ioBlock[ioState] = ioAnswer
}

//go:build wasip1

// Command badio offers direct I/O (anvil_io, ABI minor 3) and then lies
// in its control block, one way per kind: "huge" claims an answer of
// 2 GiB, "outside" one past the end of its memory, "nobuffer" a request
// buffer outside its memory; "ok" answers properly from its buffer.
// "extism" answers through Extism's output instead, "silent" not at all,
// "seterror" sets Extism's error and fails, "errzero" sets it and
// returns 0: whatever one call leaves in Extism's kernel must not leak
// into the next.
package main

import (
	"bytes"
	"unsafe"

	"github.com/extism/go-pdk"
)

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"badio","version":"1.0.0","abi_major":1,"abi_minor":3,"kinds":[` +
		`{"name":"ok","role":"metric"},{"name":"huge","role":"metric"},` +
		`{"name":"outside","role":"metric"},{"name":"nobuffer","role":"metric"},` +
		`{"name":"extism","role":"metric"},{"name":"silent","role":"metric"},` +
		`{"name":"seterror","role":"metric"},{"name":"errzero","role":"metric"}]}`)
	return 0
}

var (
	block  [6]uint32
	buf    [64 << 10]byte
	answer = []byte(`{"score":1,"threshold":0.5,"reason":"from linear memory"}`)
)

func addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

//go:wasmexport anvil_io
func io(size int32) int32 {
	block[0], block[1] = addr(unsafe.Pointer(&buf)), uint32(len(buf))
	return int32(addr(unsafe.Pointer(&block)))
}

//go:wasmexport anvil_measure
func measure() int32 {
	req := buf[:block[2]]
	block[3] = 0
	switch {
	case bytes.Contains(req, []byte(`"kind":"extism"`)):
		pdk.OutputString(`{"score":1,"threshold":0.5,"reason":"through Extism"}`)
		return 0
	case bytes.Contains(req, []byte(`"kind":"silent"`)):
		return 0
	case bytes.Contains(req, []byte(`"kind":"seterror"`)):
		pdk.SetErrorString("guest says no")
		return 1
	case bytes.Contains(req, []byte(`"kind":"errzero"`)):
		pdk.SetErrorString("guest says no and returns 0")
		return 0
	}
	ptr, n := addr(unsafe.Pointer(&answer[0])), uint32(len(answer))
	switch {
	case bytes.Contains(req, []byte(`"kind":"huge"`)):
		n = 1 << 31
	case bytes.Contains(req, []byte(`"kind":"outside"`)):
		ptr = 0xffff_fff0
	case bytes.Contains(req, []byte(`"kind":"nobuffer"`)):
		// This answer is fine; the next request has nowhere to go.
		block[0] = 0xffff_0000
	}
	block[4], block[5], block[3] = ptr, n, 2
	return 0
}

func main() {}

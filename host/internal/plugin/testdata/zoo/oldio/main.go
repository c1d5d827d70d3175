//go:build wasip1

// Command oldio exports a function named anvil_io but says abi_minor 2:
// the host must not call it (it panics if called) and must use Extism's
// input and output.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"oldio","version":"1.0.0","abi_major":1,"abi_minor":2,"kinds":[{"name":"echo","role":"metric"}]}`)
	return 0
}

//go:wasmexport anvil_io
func io(size int32) int32 { panic("anvil_io called on a module of abi_minor 2") }

//go:wasmexport anvil_measure
func measure() int32 {
	if len(pdk.Input()) == 0 {
		pdk.SetErrorString("empty Extism input")
		return 1
	}
	pdk.OutputString(`{"score":1,"threshold":0.5,"reason":"through Extism"}`)
	return 0
}

func main() {}

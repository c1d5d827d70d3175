//go:build wasip1

// Command badiosig says abi_minor 3 and exports anvil_io with the wrong
// signature, () -> i32: the host refuses to load it.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"badiosig","version":"1.0.0","abi_major":1,"abi_minor":3,"kinds":[{"name":"echo","role":"metric"}]}`)
	return 0
}

//go:wasmexport anvil_io
func io() int32 { return 0 }

//go:wasmexport anvil_measure
func measure() int32 {
	pdk.OutputString(`{"score":1,"threshold":0.5}`)
	return 0
}

func main() {}

//go:build wasip1

// Command nodescribe has the v1 marker but no anvil_describe.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_measure
func measure() int32 {
	pdk.OutputString(`{"score":1,"success":true}`)
	return 0
}

func main() {}

//go:build wasip1

// Command nomarker exports the calls of ABI v1 but no marker: it never
// said it speaks any Anvil ABI.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"nomarker","version":"1.0.0","abi_major":1,"kinds":[{"name":"m","role":"metric"}]}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	pdk.OutputString(`{"score":1,"success":true}`)
	return 0
}

func main() {}

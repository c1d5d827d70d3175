//go:build wasip1

// Command wrongabi speaks a future ABI major: it exports anvil_abi_v2.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v2
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"wrongabi","version":"2.0.0","abi_major":2,"abi_minor":0,"kinds":[{"name":"m","role":"metric"}]}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	pdk.OutputString(`{"score":1,"success":true}`)
	return 0
}

func main() {}

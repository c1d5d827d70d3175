//go:build wasip1

// Command dupdesc describes itself with a key written twice: a reader that
// keeps the first "name" and one that keeps the last disagree on who the
// plugin is.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"dupdesc","version":"1.0.0","abi_major":1,"abi_minor":0,` +
		`"kinds":[{"name":"m","role":"metric"}],"name":"geval"}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	pdk.OutputString(`{"score":1,"success":true}`)
	return 0
}

func main() {}

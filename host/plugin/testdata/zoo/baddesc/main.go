//go:build wasip1

// Command baddesc describes itself inconsistently in every way the host
// checks.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"Bad Name","version":"","abi_major":1,"kinds":[` +
		`{"name":"dup","role":"metric"},` +
		`{"name":"dup","role":"metric"},` +
		`{"name":"odd","role":"gate"},` +
		`{"name":"schema","role":"metric","config_schema":"not a schema"},` +
		`{"name":"prep","role":"metric","prepare":true}]}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	pdk.OutputString(`{"score":1,"success":true}`)
	return 0
}

func main() {}

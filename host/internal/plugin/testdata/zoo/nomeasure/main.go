//go:build wasip1

// Command nomeasure declares a metric kind but does not export
// anvil_measure, and a node kind with anvil_node present.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"nomeasure","version":"1.0.0","abi_major":1,"abi_minor":0,` +
		`"kinds":[{"name":"score_it","role":"metric"},{"name":"gate","role":"node","verdicts":["false","true"]}]}`)
	return 0
}

//go:wasmexport anvil_node
func node() int32 {
	pdk.OutputString(`{"verdict":"true"}`)
	return 0
}

func main() {}

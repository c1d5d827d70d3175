//go:build wasip1

// Command garbage passes every load-time check and then breaks the ABI at
// call time, in the way the measured kind's name says.
package main

import (
	"strings"

	"github.com/extism/go-pdk"
)

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"garbage","version":"1.0.0","abi_major":1,"abi_minor":0,"kinds":[` +
		`{"name":"ok","role":"metric"},{"name":"notjson","role":"metric"},{"name":"seterror","role":"metric"},` +
		`{"name":"status","role":"metric"},{"name":"noscore","role":"metric"},{"name":"badscore","role":"metric"},` +
		`{"name":"array","role":"metric"},{"name":"badverdict","role":"node","verdicts":["false","true"]}]}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	in := pdk.InputString()
	switch {
	case strings.Contains(in, `"kind":"notjson"`):
		pdk.OutputString("this is not JSON")
	case strings.Contains(in, `"kind":"seterror"`):
		pdk.SetErrorString("garbage: cannot make sense of this")
		return 1
	case strings.Contains(in, `"kind":"status"`):
		return 7
	case strings.Contains(in, `"kind":"noscore"`):
		pdk.OutputString(`{"success":true}`)
	case strings.Contains(in, `"kind":"badscore"`):
		pdk.OutputString(`{"score":7,"success":true}`)
	case strings.Contains(in, `"kind":"array"`):
		pdk.OutputString(`[1,2,3]`)
	default:
		pdk.OutputString(`{"score":1,"success":true,"reason":"ok"}`)
	}
	return 0
}

//go:wasmexport anvil_node
func node() int32 {
	pdk.OutputString(`{"verdict":"maybe"}`)
	return 0
}

func main() {}

//go:build wasip1

// Command baddesc describes itself inconsistently in every way the host
// checks, including config schemas that refer to files and URLs.
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
		`{"name":"prep","role":"metric","prepare":true},` +
		// Schemas that point outside themselves: the host must refuse
		// them without opening a file (one that never ends, too) or a URL.
		`{"name":"reffile","role":"metric","config_schema":{"$ref":"file:///etc/passwd"}},` +
		`{"name":"refstdin","role":"metric","config_schema":{"type":"object","properties":{"x":{"$ref":"file:///dev/stdin"}}}},` +
		`{"name":"refhttp","role":"metric","config_schema":{"$ref":"http://127.0.0.1:9/schema.json"}},` +
		`{"name":"refrelative","role":"metric","config_schema":{"$id":"file:///etc/","$ref":"passwd"}}]}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	pdk.OutputString(`{"score":1,"success":true}`)
	return 0
}

func main() {}

//go:build wasip1

// Command badimport imports functions the host does not provide (module
// "acme", and a name the host's "env" module lacks): the host must refuse
// it at load naming both, not fail to instantiate it saying
// "module[acme] not instantiated".
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmimport acme thing
func thing() int32

//go:wasmimport env seed
func seed() int32

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"badimport","version":"1.0.0","abi_major":1,"abi_minor":0,"kinds":[{"name":"x","role":"metric"}]}`)
	return 0
}

//go:wasmexport anvil_measure
func measure() int32 {
	if len(pdk.Input()) > 1<<40 { // never: keeps the imports
		return thing() + seed()
	}
	pdk.OutputString(`{"score":1,"success":true,"threshold":0}`)
	return 0
}

func main() {}

//go:build wasip1

// Command unasked calls the judge without asking for the capability in its
// descriptor: an operator's grant alone must not make the judge reachable.
package main

import "github.com/extism/go-pdk"

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"unasked","version":"1.0.0","abi_major":1,"abi_minor":0,"kinds":[{"name":"ask","role":"metric"}]}`)
	return 0
}

//go:wasmimport extism:host/user anvil_judge
func anvilJudge(uint64) uint64

// measure sends one judge request and reports the host's answer,
// verbatim, as the result's details.
//
//go:wasmexport anvil_measure
func measure() int32 {
	batch := pdk.AllocateString(`{"requests":[{"messages":[{"role":"user","content":"are you there?"}]}]}`)
	res := pdk.FindMemory(anvilJudge(batch.Offset()))
	pdk.OutputString(`{"score":1,"success":true,"details":` + string(res.ReadBytes()) + `}`)
	return 0
}

func main() {}

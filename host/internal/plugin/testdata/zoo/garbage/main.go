//go:build wasip1

// Command garbage passes every load-time check and then breaks the ABI at
// call time, in the way the measured kind's name says. It asks for the
// judge, so that a granted instance reaches the parts of anvil_judge that
// read a batch.
package main

import (
	"strings"

	"github.com/extism/go-pdk"
)

//go:wasmexport anvil_abi_v1
func marker() {}

// kinds lists the metric kinds; every one is answered by measure.
var kinds = []string{
	"ok", "notjson", "seterror", "status", "noscore", "badscore", "array",
	"dupkey", "dupcase", "dupnested", "bignum", "badthreshold", "negscore",
	"grow", "hugeoutput", "hugeerror", "hugelog", "hugeconfig", "http",
	"dupjudge", "judgerange", "duplog",
}

//go:wasmexport anvil_describe
func describe() int32 {
	var b strings.Builder
	b.WriteString(`{"name":"garbage","version":"1.0.0","abi_major":1,"abi_minor":0,"capabilities":["judge"],"kinds":[`)
	for _, k := range kinds {
		b.WriteString(`{"name":"` + k + `","role":"metric"},`)
	}
	b.WriteString(`{"name":"countsitems","role":"metric","required_fields":["context"]},`)
	b.WriteString(`{"name":"badverdict","role":"node","verdicts":["false","true"]}]}`)
	pdk.OutputString(b.String())
	return 0
}

// huge is the size of the blocks the "huge*" kinds hand the host: more
// than max_output_bytes, and within the default 64 MiB of Extism memory.
const huge = 48 << 20

// The raw Extism and Anvil imports, called with blocks the PDK would not
// make.
//
//go:wasmimport extism:host/env error_set
func errorSet(uint64)

//go:wasmimport extism:host/env log_info
func logInfo(uint64)

//go:wasmimport extism:host/env config_get
func configGet(uint64) uint64

//go:wasmimport extism:host/env http_request
func httpRequest(uint64, uint64) uint64

//go:wasmimport extism:host/user anvil_judge
func anvilJudge(uint64) uint64

//go:wasmimport extism:host/user anvil_log
func anvilLog(uint64)

const ok = `{"score":1,"success":true,"reason":"ok"}`

//go:wasmexport anvil_measure
func measure() int32 {
	in := pdk.InputString()
	kind := func(k string) bool { return strings.Contains(in, `"kind":"`+k+`"`) }
	switch {
	case kind("countsitems"):
		// Presence by the list's length alone: a context of blank
		// strings is scored, where it is missing (abi/v1/README.md §8).
		if !strings.Contains(in, `"context":[`) {
			pdk.OutputString(`{"success":false,"error":{"code":"missing_field","field":"context","message":"context is missing"}}`)
			return 0
		}
		pdk.OutputString(ok)
	case kind("notjson"):
		pdk.OutputString("this is not JSON")
	case kind("seterror"):
		pdk.SetErrorString("garbage: cannot make sense of this")
		return 1
	case kind("status"):
		return 7
	case kind("noscore"):
		pdk.OutputString(`{"success":true}`)
	case kind("badscore"):
		pdk.OutputString(`{"score":7,"success":true}`)
	case kind("array"):
		pdk.OutputString(`[1,2,3]`)
	case kind("dupkey"):
		pdk.OutputString(`{"score":1,"success":true,"score":0.5}`)
	case kind("dupcase"):
		pdk.OutputString(`{"score":1,"success":true,"Score":0.5}`)
	case kind("dupnested"):
		pdk.OutputString(`{"score":1,"success":true,"details":{"steps":[{"a":1,"a":2}]}}`)
	case kind("bignum"):
		pdk.OutputString(`{"score":1,"success":true,"details":{"n":1e400}}`)
	case kind("badthreshold"):
		pdk.OutputString(`{"score":1,"success":true,"threshold":7}`)
	case kind("negscore"):
		pdk.OutputString(`{"score":-0.0000001,"success":false}`)
	case kind("grow"):
		// Grows Extism's memory to hold a huge block, and frees it: the
		// next call on this instance allocates one without growing.
		m := pdk.Allocate(huge)
		m.Free()
		pdk.OutputString(ok)
	case kind("hugeoutput"):
		pdk.OutputMemory(pdk.Allocate(huge))
	case kind("hugeerror"):
		errorSet(offset(pdk.Allocate(huge)))
		return 1
	case kind("hugelog"):
		logInfo(offset(pdk.Allocate(huge)))
		pdk.OutputString(ok)
	case kind("hugeconfig"):
		configGet(offset(pdk.Allocate(huge)))
		pdk.OutputString(ok)
	case kind("http"):
		req := pdk.AllocateString(`{"url":"http://127.0.0.1:9/","method":"GET"}`)
		httpRequest(req.Offset(), 0)
		pdk.OutputString(ok)
	case kind("dupjudge"):
		judge(`{"requests":[{"messages":[{"role":"user","content":"a"}]}],"requests":[]}`)
	case kind("judgerange"):
		judge(`{"requests":[{"messages":[{"role":"user","content":"a"}],"temperature":7}]}`)
	case kind("duplog"):
		anvilLog(offset(pdk.AllocateString(`{"level":"info","message":"first","message":"second"}`)))
		anvilLog(offset(pdk.AllocateString(`{"level":"info","message":"well formed"}`)))
		pdk.OutputString(ok)
	default:
		pdk.OutputString(ok)
	}
	return 0
}

// judge sends a batch as written and reports the host's answer, verbatim,
// as the result's details.
func judge(batch string) {
	res := pdk.FindMemory(anvilJudge(offset(pdk.AllocateString(batch))))
	pdk.OutputString(`{"score":1,"success":true,"details":` + string(res.ReadBytes()) + `}`)
}

func offset(m pdk.Memory) uint64 { return m.Offset() }

//go:wasmexport anvil_node
func node() int32 {
	pdk.OutputString(`{"verdict":"maybe"}`)
	return 0
}

func main() {}

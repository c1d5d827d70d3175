//go:build wasip1

// Command foreign behaves as guests in other languages do: it aborts the
// AssemblyScript way (env.abort with a UTF-16 message), sets an Extism
// error before trapping (a guest without stderr), and asks for the judge
// per kind (ABI minor 1): "judged" inherits the plugin's capabilities,
// "judge_free" asks for none and calls anvil_judge anyway.
package main

import (
	"encoding/binary"
	"encoding/json"
	"runtime"
	"strings"
	"unicode/utf16"
	"unsafe"

	"github.com/extism/go-pdk"
)

//go:wasmexport anvil_abi_v1
func marker() {}

//go:wasmexport anvil_describe
func describe() int32 {
	pdk.OutputString(`{"name":"foreign","version":"1.0.0","abi_major":1,"abi_minor":1,"capabilities":["judge"],"kinds":[` +
		`{"name":"abort","role":"metric","capabilities":[]},` +
		`{"name":"errtrap","role":"metric","capabilities":[]},` +
		`{"name":"judged","role":"metric"},` +
		`{"name":"judge_free","role":"metric","capabilities":[]}]}`)
	return 0
}

//go:wasmimport env abort
func abort(msg, file, line, col uint32)

//go:wasmimport extism:host/user anvil_judge
func anvilJudge(uint64) uint64

// asString lays out s as AssemblyScript does: UTF-16LE code units, their
// byte length in the u32 before them. The buffer must stay alive.
func asString(s string) ([]byte, uint32) {
	units := utf16.Encode([]rune(s))
	buf := make([]byte, 4+2*len(units))
	binary.LittleEndian.PutUint32(buf, uint32(2*len(units)))
	for i, u := range units {
		binary.LittleEndian.PutUint16(buf[4+2*i:], u)
	}
	return buf, uint32(uintptr(unsafe.Pointer(&buf[4])))
}

//go:wasmexport anvil_measure
func measure() int32 {
	in := pdk.InputString()
	kind := func(k string) bool { return strings.Contains(in, `"kind":"`+k+`"`) }
	switch {
	case kind("abort"):
		m, mp := asString("keyword list is empty — ünïcode")
		f, fp := asString("assembly/index.ts")
		abort(mp, fp, 12, 5)
		runtime.KeepAlive(m)
		runtime.KeepAlive(f)
	case kind("errtrap"):
		pdk.SetErrorString("foreign: config.keywords[0] is not a string")
		panic("trap after error_set")
	case kind("judged"), kind("judge_free"):
		batch := pdk.AllocateString(`{"requests":[{"messages":[{"role":"user","content":"hi"}]}]}`)
		res := pdk.FindMemory(anvilJudge(batch.Offset()))
		var out struct {
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(res.ReadBytes(), &out)
		if out.Error != nil {
			b, _ := json.Marshal(map[string]any{"success": false, "threshold": 0, "error": out.Error})
			pdk.Output(b)
			return 0
		}
		pdk.OutputString(`{"score":1,"success":true,"threshold":0}`)
	}
	return 0
}

func main() {}

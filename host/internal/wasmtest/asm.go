// Package wasmtest is a small WebAssembly module assembler for tests: enough of the binary
// format to write hostile guests by hand (the hostile shapes of the plugin and CLI tests) —
// shapes a Go guest cannot have, such as a call tree with no loop in it.
// Function bodies are raw bytes built with the opcode constants and
// helpers below; nothing is validated here (wazero does that at load).
package wasmtest

import (
	"bytes"
	"fmt"
)

// envModule is the Extism kernel's import module.
const envModule = "extism:host/env"

// Opcodes the hand-written guests use.
const (
	OpUnreachable = 0x00
	OpBlock       = 0x02
	OpLoop        = 0x03
	OpIf          = 0x04
	OpElse        = 0x05
	OpEnd         = 0x0b
	OpBr          = 0x0c
	OpBrIf        = 0x0d
	OpReturn      = 0x0f
	OpCall        = 0x10
	OpDrop        = 0x1a
	OpLocalGet    = 0x20
	OpLocalSet    = 0x21
	OpLocalTee    = 0x22
	OpI32Const    = 0x41
	OpI64Const    = 0x42
	OpI32Eqz      = 0x45
	OpI32Eq       = 0x46
	OpI32Add      = 0x6a
	OpI32Sub      = 0x6b
	OpI32Mul      = 0x6c
	OpI32Xor      = 0x73
	OpI32Rotl     = 0x77
	OpI64Add      = 0x7c
	OpI64Sub      = 0x7d
	OpMemoryGrow  = 0x40 // then memory index 0
	OpRefNull     = 0xd0 // then the reference type
	OpPrefixFC    = 0xfc // then a LEB128 sub-opcode
	FCMemoryFill  = 11   // then memory index 0
	FCTableGrow   = 15   // then table index

	BlockEmpty = 0x40 // block type: no result
	TypeI32    = 0x7f
	TypeI64    = 0x7e
	FuncRef    = 0x70
)

// uleb appends x as unsigned LEB128.
func ULEB(b []byte, x uint64) []byte {
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if x != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// sleb appends x as signed LEB128.
func SLEB(b []byte, x int64) []byte {
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Code builds a function body (or a part of one).
type Code []byte

func (c Code) Op(ops ...byte) Code    { return append(c, ops...) }
func (c Code) I32(x int32) Code       { return SLEB(append(c, OpI32Const), int64(x)) }
func (c Code) I64(x int64) Code       { return SLEB(append(c, OpI64Const), x) }
func (c Code) Call(f uint32) Code     { return ULEB(append(c, OpCall), uint64(f)) }
func (c Code) Get(l uint32) Code      { return ULEB(append(c, OpLocalGet), uint64(l)) }
func (c Code) Set(l uint32) Code      { return ULEB(append(c, OpLocalSet), uint64(l)) }
func (c Code) Tee(l uint32) Code      { return ULEB(append(c, OpLocalTee), uint64(l)) }
func (c Code) Br(depth uint32) Code   { return ULEB(append(c, OpBr), uint64(depth)) }
func (c Code) BrIf(depth uint32) Code { return ULEB(append(c, OpBrIf), uint64(depth)) }
func (c Code) Fc(sub uint32, imm ...byte) Code {
	return append(ULEB(append(c, OpPrefixFC), uint64(sub)), imm...)
}

type funcType struct{ params, results []byte }

func (t funcType) key() string { return string(t.params) + "|" + string(t.results) }

type wasmFuncImport struct {
	module, name string
	typ          uint32
}

type wasmFunc struct {
	typ    uint32
	locals []byte // one declared local per entry, by value type
	body   Code   // without the final end
}

type wasmTable struct{ min uint32 }

type wasmExport struct {
	name  string
	kind  byte // 0 function
	index uint32
}

type wasmData struct {
	offset uint32
	bytes  []byte
}

// Module is a module being assembled. Imports must all be added
// before the first function, so that function indices are stable: the
// n-th defined function is index len(imports)+n.
type Module struct {
	types   []funcType
	imports []wasmFuncImport
	funcs   []wasmFunc
	tables  []wasmTable
	memMin  uint32
	hasMem  bool
	exports []wasmExport
	data    []wasmData
	// start is the start function's index plus one (0: none).
	start uint32
}

// SetStart makes f the module's start function, which runs while the
// module is instantiated.
func (m *Module) SetStart(f uint32) { m.start = f + 1 }

func (m *Module) TypeOf(params, results []byte) uint32 {
	t := funcType{params, results}
	for i, have := range m.types {
		if have.key() == t.key() {
			return uint32(i)
		}
	}
	m.types = append(m.types, t)
	return uint32(len(m.types) - 1)
}

// importFunc adds a function import and returns its index.
func (m *Module) ImportFunc(module, name string, params, results []byte) uint32 {
	if len(m.funcs) > 0 {
		panic("asm: import after a function")
	}
	m.imports = append(m.imports, wasmFuncImport{module, name, m.TypeOf(params, results)})
	return uint32(len(m.imports) - 1)
}

// nextFunc is the index the next defined function will have.
func (m *Module) NextFunc() uint32 { return uint32(len(m.imports) + len(m.funcs)) }

// addFunc defines a function and returns its index.
func (m *Module) AddFunc(params, results, locals []byte, body Code) uint32 {
	m.funcs = append(m.funcs, wasmFunc{typ: m.TypeOf(params, results), locals: locals, body: body})
	return m.NextFunc() - 1
}

func (m *Module) Export(name string, f uint32) {
	m.exports = append(m.exports, wasmExport{name: name, kind: 0, index: f})
}

func (m *Module) Memory(minPages uint32) { m.memMin, m.hasMem = minPages, true }

func (m *Module) Table(min uint32) uint32 {
	m.tables = append(m.tables, wasmTable{min})
	return uint32(len(m.tables) - 1)
}

func (m *Module) DataAt(offset uint32, b []byte) {
	m.data = append(m.data, wasmData{offset, b})
}

func asmName(b []byte, s string) []byte { return append(ULEB(b, uint64(len(s))), s...) }

func asmSection(out []byte, id byte, count int, body []byte) []byte {
	if count == 0 {
		return out
	}
	payload := append(ULEB(nil, uint64(count)), body...)
	return append(ULEB(append(out, id), uint64(len(payload))), payload...)
}

// bytes encodes the module.
func (m *Module) Bytes() []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	var b []byte
	for _, t := range m.types {
		b = append(b, 0x60)
		b = append(ULEB(b, uint64(len(t.params))), t.params...)
		b = append(ULEB(b, uint64(len(t.results))), t.results...)
	}
	out = asmSection(out, 1, len(m.types), b)
	b = nil
	for _, im := range m.imports {
		b = asmName(asmName(b, im.module), im.name)
		b = ULEB(append(b, 0), uint64(im.typ))
	}
	out = asmSection(out, 2, len(m.imports), b)
	b = nil
	for _, f := range m.funcs {
		b = ULEB(b, uint64(f.typ))
	}
	out = asmSection(out, 3, len(m.funcs), b)
	b = nil
	for _, t := range m.tables {
		b = ULEB(append(b, FuncRef, 0), uint64(t.min)) // no maximum
	}
	out = asmSection(out, 4, len(m.tables), b)
	if m.hasMem {
		out = asmSection(out, 5, 1, ULEB([]byte{0}, uint64(m.memMin)))
	}
	b = nil
	for _, e := range m.exports {
		b = ULEB(append(asmName(b, e.name), e.kind), uint64(e.index))
	}
	out = asmSection(out, 7, len(m.exports), b)
	if m.start != 0 {
		idx := ULEB(nil, uint64(m.start-1))
		out = append(ULEB(append(out, 8), uint64(len(idx))), idx...)
	}
	b = nil
	for _, f := range m.funcs {
		var fb []byte
		fb = ULEB(fb, uint64(len(f.locals)))
		for _, l := range f.locals {
			fb = append(fb, 1, l)
		}
		fb = append(append(fb, f.body...), OpEnd)
		b = append(ULEB(b, uint64(len(fb))), fb...)
	}
	out = asmSection(out, 10, len(m.funcs), b)
	b = nil
	for _, d := range m.data {
		b = append(b, 0) // active, memory 0
		b = append(SLEB(append(b, OpI32Const), int64(int32(d.offset))), OpEnd)
		b = append(ULEB(b, uint64(len(d.bytes))), d.bytes...)
	}
	out = asmSection(out, 11, len(m.data), b)
	return out
}

// The Extism and Anvil imports a hand-written guest uses.
var (
	I32  = []byte{TypeI32}
	I64  = []byte{TypeI64}
	None = []byte{}
)

// Guest is a hand-written Anvil plugin: the ABI marker,
// anvil_describe and anvil_measure, talking to the host through Extism's
// kernel. Its bodies write every byte they hand the host with one
// store_u8 call each, straight-line, so the plugin has no loop but the
// ones an attack adds.
type Guest struct {
	M *Module
	// The function indices of its imports.
	Alloc, StoreU8, StoreU64, OutputSet, Log uint32
}

// NewGuest starts a guest: its imports and the ABI marker.
func NewGuest() *Guest {
	m := &Module{}
	g := &Guest{M: m}
	g.Alloc = m.ImportFunc(envModule, "alloc", I64, I64)
	g.StoreU8 = m.ImportFunc(envModule, "store_u8", []byte{TypeI64, TypeI32}, None)
	g.StoreU64 = m.ImportFunc(envModule, "store_u64", []byte{TypeI64, TypeI64}, None)
	g.OutputSet = m.ImportFunc(envModule, "output_set", []byte{TypeI64, TypeI64}, None)
	g.Log = m.ImportFunc("extism:host/user", "anvil_log", I64, None)
	m.Export("anvil_abi_v1", m.AddFunc(None, None, nil, nil))
	return g
}

// block writes b into a fresh kernel block, whose offset it leaves in
// local l (an I64 local of the function the Code is for).
func (g *Guest) Block(c Code, l uint32, b []byte) Code {
	c = c.I64(int64(len(b))).Call(g.Alloc).Set(l)
	for i, x := range b {
		c = c.Get(l).I64(int64(i)).Op(OpI64Add).I32(int32(x)).Call(g.StoreU8)
	}
	return c
}

// output makes b the call's output (local l: a scratch I64).
func (g *Guest) Output(c Code, l uint32, b []byte) Code {
	c = g.Block(c, l, b)
	return c.Get(l).I64(int64(len(b))).Call(g.OutputSet)
}

// Started is the message a shape guest logs just before its
// attack: the test knows then that guest Code is running.
const Started = "shape: attack starts"

// started logs Started through anvil_log (local l: a scratch I64).
func (g *Guest) Started(c Code, l uint32) Code {
	c = g.Block(c, l, []byte(`{"level":"info","message":"`+Started+`"}`))
	return c.Get(l).Call(g.Log)
}

// Descriptor is the descriptor of a shape guest named name.
func Descriptor(name string) []byte {
	return fmt.Appendf(nil, `{"name":%q,"version":"1.0.0","abi_major":1,"abi_minor":0,"kinds":[{"name":"shape","role":"metric"}]}`, name)
}

// finish adds anvil_describe and anvil_measure: each runs its attack (nil:
// None) after logging Started, then answers. An attack is Code with
// one scratch I64 local (index 0) available. measureAnswer is the
// measure's JSON output; an attack that wants to choose its answer
// writes it itself and leaves measureAnswer nil.
func (g *Guest) Finish(name string, describeAttack, measureAttack Code, measureAnswer []byte) []byte {
	d := Code{}
	if describeAttack != nil {
		d = append(g.Started(d, 0), describeAttack...)
	}
	d = g.Output(d, 0, Descriptor(name)).I32(0)
	g.M.Export("anvil_describe", g.M.AddFunc(None, I32, I64, d))
	if measureAttack != nil {
		c := append(g.Started(Code{}, 0), measureAttack...)
		if measureAnswer != nil {
			c = g.Output(c, 0, measureAnswer)
		}
		g.M.Export("anvil_measure", g.M.AddFunc(None, I32, I64, c.I32(0)))
	}
	return g.M.Bytes()
}

// selfCheck: the assembler's output starts like a module should (the
// real check is wazero's, at load).
func IsWasm(b []byte) bool { return bytes.HasPrefix(b, []byte{0, 'a', 's', 'm', 1, 0, 0, 0}) }

package plugin

import (
	"bytes"
	"fmt"
)

// A small WebAssembly module assembler for tests: enough of the binary
// format to write hostile guests by hand (hostile_shapes_test.go) —
// shapes a Go guest cannot have, such as a call tree with no loop in it.
// Function bodies are raw bytes built with the opcode constants and
// helpers below; nothing is validated here (wazero does that at load).

// Opcodes the hand-written guests use.
const (
	opUnreachable = 0x00
	opBlock       = 0x02
	opLoop        = 0x03
	opIf          = 0x04
	opElse        = 0x05
	opEnd         = 0x0b
	opBr          = 0x0c
	opBrIf        = 0x0d
	opReturn      = 0x0f
	opCall        = 0x10
	opDrop        = 0x1a
	opLocalGet    = 0x20
	opLocalSet    = 0x21
	opLocalTee    = 0x22
	opI32Const    = 0x41
	opI64Const    = 0x42
	opI32Eqz      = 0x45
	opI32Eq       = 0x46
	opI32Add      = 0x6a
	opI32Sub      = 0x6b
	opI32Mul      = 0x6c
	opI32Xor      = 0x73
	opI32Rotl     = 0x77
	opI64Add      = 0x7c
	opI64Sub      = 0x7d
	opMemoryGrow  = 0x40 // then memory index 0
	opRefNull     = 0xd0 // then the reference type
	opPrefixFC    = 0xfc // then a LEB128 sub-opcode
	fcMemoryFill  = 11   // then memory index 0
	fcTableGrow   = 15   // then table index

	blockEmpty = 0x40 // block type: no result
	typeI32    = 0x7f
	typeI64    = 0x7e
	funcRef    = 0x70
)

// uleb appends x as unsigned LEB128.
func asmU(b []byte, x uint64) []byte {
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
func asmS(b []byte, x int64) []byte {
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// wcode builds a function body (or a part of one).
type wcode []byte

func (c wcode) op(ops ...byte) wcode    { return append(c, ops...) }
func (c wcode) i32(x int32) wcode       { return asmS(append(c, opI32Const), int64(x)) }
func (c wcode) i64(x int64) wcode       { return asmS(append(c, opI64Const), x) }
func (c wcode) call(f uint32) wcode     { return asmU(append(c, opCall), uint64(f)) }
func (c wcode) get(l uint32) wcode      { return asmU(append(c, opLocalGet), uint64(l)) }
func (c wcode) set(l uint32) wcode      { return asmU(append(c, opLocalSet), uint64(l)) }
func (c wcode) tee(l uint32) wcode      { return asmU(append(c, opLocalTee), uint64(l)) }
func (c wcode) br(depth uint32) wcode   { return asmU(append(c, opBr), uint64(depth)) }
func (c wcode) brIf(depth uint32) wcode { return asmU(append(c, opBrIf), uint64(depth)) }
func (c wcode) fc(sub uint32, imm ...byte) wcode {
	return append(asmU(append(c, opPrefixFC), uint64(sub)), imm...)
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
	body   wcode  // without the final end
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

// wasmModule is a module being assembled. Imports must all be added
// before the first function, so that function indices are stable: the
// n-th defined function is index len(imports)+n.
type wasmModule struct {
	types   []funcType
	imports []wasmFuncImport
	funcs   []wasmFunc
	tables  []wasmTable
	memMin  uint32
	hasMem  bool
	exports []wasmExport
	data    []wasmData
}

func (m *wasmModule) typeOf(params, results []byte) uint32 {
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
func (m *wasmModule) importFunc(module, name string, params, results []byte) uint32 {
	if len(m.funcs) > 0 {
		panic("asm: import after a function")
	}
	m.imports = append(m.imports, wasmFuncImport{module, name, m.typeOf(params, results)})
	return uint32(len(m.imports) - 1)
}

// nextFunc is the index the next defined function will have.
func (m *wasmModule) nextFunc() uint32 { return uint32(len(m.imports) + len(m.funcs)) }

// addFunc defines a function and returns its index.
func (m *wasmModule) addFunc(params, results, locals []byte, body wcode) uint32 {
	m.funcs = append(m.funcs, wasmFunc{typ: m.typeOf(params, results), locals: locals, body: body})
	return m.nextFunc() - 1
}

func (m *wasmModule) export(name string, f uint32) {
	m.exports = append(m.exports, wasmExport{name: name, kind: 0, index: f})
}

func (m *wasmModule) memory(minPages uint32) { m.memMin, m.hasMem = minPages, true }

func (m *wasmModule) table(min uint32) uint32 {
	m.tables = append(m.tables, wasmTable{min})
	return uint32(len(m.tables) - 1)
}

func (m *wasmModule) dataAt(offset uint32, b []byte) {
	m.data = append(m.data, wasmData{offset, b})
}

func asmName(b []byte, s string) []byte { return append(asmU(b, uint64(len(s))), s...) }

func asmSection(out []byte, id byte, count int, body []byte) []byte {
	if count == 0 {
		return out
	}
	payload := append(asmU(nil, uint64(count)), body...)
	return append(asmU(append(out, id), uint64(len(payload))), payload...)
}

// bytes encodes the module.
func (m *wasmModule) bytes() []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	var b []byte
	for _, t := range m.types {
		b = append(b, 0x60)
		b = append(asmU(b, uint64(len(t.params))), t.params...)
		b = append(asmU(b, uint64(len(t.results))), t.results...)
	}
	out = asmSection(out, 1, len(m.types), b)
	b = nil
	for _, im := range m.imports {
		b = asmName(asmName(b, im.module), im.name)
		b = asmU(append(b, 0), uint64(im.typ))
	}
	out = asmSection(out, 2, len(m.imports), b)
	b = nil
	for _, f := range m.funcs {
		b = asmU(b, uint64(f.typ))
	}
	out = asmSection(out, 3, len(m.funcs), b)
	b = nil
	for _, t := range m.tables {
		b = asmU(append(b, funcRef, 0), uint64(t.min)) // no maximum
	}
	out = asmSection(out, 4, len(m.tables), b)
	if m.hasMem {
		out = asmSection(out, 5, 1, asmU([]byte{0}, uint64(m.memMin)))
	}
	b = nil
	for _, e := range m.exports {
		b = asmU(append(asmName(b, e.name), e.kind), uint64(e.index))
	}
	out = asmSection(out, 7, len(m.exports), b)
	b = nil
	for _, f := range m.funcs {
		var fb []byte
		fb = asmU(fb, uint64(len(f.locals)))
		for _, l := range f.locals {
			fb = append(fb, 1, l)
		}
		fb = append(append(fb, f.body...), opEnd)
		b = append(asmU(b, uint64(len(fb))), fb...)
	}
	out = asmSection(out, 10, len(m.funcs), b)
	b = nil
	for _, d := range m.data {
		b = append(b, 0) // active, memory 0
		b = append(asmS(append(b, opI32Const), int64(int32(d.offset))), opEnd)
		b = append(asmU(b, uint64(len(d.bytes))), d.bytes...)
	}
	out = asmSection(out, 11, len(m.data), b)
	return out
}

// The Extism and Anvil imports a hand-written guest uses.
var (
	vI32  = []byte{typeI32}
	vI64  = []byte{typeI64}
	vNone = []byte{}
)

// shapeGuest is a hand-written Anvil plugin: the ABI marker,
// anvil_describe and anvil_measure, talking to the host through Extism's
// kernel. Its bodies write every byte they hand the host with one
// store_u8 call each, straight-line, so the plugin has no loop but the
// ones an attack adds.
type shapeGuest struct {
	m                                         *wasmModule
	alloc, storeU8, storeU64, outputSet, alog uint32
}

func newShapeGuest() *shapeGuest {
	m := &wasmModule{}
	g := &shapeGuest{m: m}
	g.alloc = m.importFunc(envModule, "alloc", vI64, vI64)
	g.storeU8 = m.importFunc(envModule, "store_u8", []byte{typeI64, typeI32}, vNone)
	g.storeU64 = m.importFunc(envModule, "store_u64", []byte{typeI64, typeI64}, vNone)
	g.outputSet = m.importFunc(envModule, "output_set", []byte{typeI64, typeI64}, vNone)
	g.alog = m.importFunc("extism:host/user", "anvil_log", vI64, vNone)
	m.export("anvil_abi_v1", m.addFunc(vNone, vNone, nil, nil))
	return g
}

// block writes b into a fresh kernel block, whose offset it leaves in
// local l (an vI64 local of the function the wcode is for).
func (g *shapeGuest) block(c wcode, l uint32, b []byte) wcode {
	c = c.i64(int64(len(b))).call(g.alloc).set(l)
	for i, x := range b {
		c = c.get(l).i64(int64(i)).op(opI64Add).i32(int32(x)).call(g.storeU8)
	}
	return c
}

// output makes b the call's output (local l: a scratch vI64).
func (g *shapeGuest) output(c wcode, l uint32, b []byte) wcode {
	c = g.block(c, l, b)
	return c.get(l).i64(int64(len(b))).call(g.outputSet)
}

// shapeStarted is the message a shape guest logs just before its
// attack: the test knows then that guest wcode is running.
const shapeStarted = "shape: attack starts"

// started logs shapeStarted through anvil_log (local l: a scratch vI64).
func (g *shapeGuest) started(c wcode, l uint32) wcode {
	c = g.block(c, l, []byte(`{"level":"info","message":"`+shapeStarted+`"}`))
	return c.get(l).call(g.alog)
}

// shapeDescriptor is the descriptor of a shape guest named name.
func shapeDescriptor(name string) []byte {
	return fmt.Appendf(nil, `{"name":%q,"version":"1.0.0","abi_major":1,"abi_minor":0,"kinds":[{"name":"shape","role":"metric"}]}`, name)
}

// finish adds anvil_describe and anvil_measure: each runs its attack (nil:
// vNone) after logging shapeStarted, then answers. An attack is wcode with
// one scratch vI64 local (index 0) available. measureAnswer is the
// measure's JSON output; an attack that wants to choose its answer
// writes it itself and leaves measureAnswer nil.
func (g *shapeGuest) finish(name string, describeAttack, measureAttack wcode, measureAnswer []byte) []byte {
	d := wcode{}
	if describeAttack != nil {
		d = append(g.started(d, 0), describeAttack...)
	}
	d = g.output(d, 0, shapeDescriptor(name)).i32(0)
	g.m.export("anvil_describe", g.m.addFunc(vNone, vI32, vI64, d))
	if measureAttack != nil {
		c := append(g.started(wcode{}, 0), measureAttack...)
		if measureAnswer != nil {
			c = g.output(c, 0, measureAnswer)
		}
		g.m.export("anvil_measure", g.m.addFunc(vNone, vI32, vI64, c.i32(0)))
	}
	return g.m.bytes()
}

// selfCheck: the assembler's output starts like a module should (the
// real check is wazero's, at load).
func isWasm(b []byte) bool { return bytes.HasPrefix(b, []byte{0, 'a', 's', 'm', 1, 0, 0, 0}) }

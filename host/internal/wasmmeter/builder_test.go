package wasmmeter

import (
	"fmt"
)

// tmod assembles small test modules. Entries are raw encodings; the builder
// only adds vector counts, section headers and the function index space.
type tmod struct {
	types     [][]byte
	imports   [][]byte
	numImpF   uint32
	funcs     []tfunc
	tables    [][]byte
	mems      [][]byte
	globals   [][]byte
	exports   [][]byte
	start     int
	elems     [][]byte
	datas     [][]byte
	dataCount bool
	customs   [][]byte // full custom section payloads, written at the end
}

type tfunc struct {
	typ    uint32
	locals []byte // one value type per local
	code   []byte
}

func newMod() *tmod { return &tmod{start: -1} }

func (m *tmod) typ(params, results []byte) uint32 {
	t := ins(byte(0x60), uleb(uint32(len(params))), params, uleb(uint32(len(results))), results)
	for i, x := range m.types {
		if string(x) == string(t) {
			return uint32(i)
		}
	}
	m.types = append(m.types, t)
	return uint32(len(m.types) - 1)
}

func (m *tmod) importFunc(module, name string, params, results []byte) uint32 {
	if len(m.funcs) > 0 {
		panic("imports after functions")
	}
	t := m.typ(params, results)
	m.imports = append(m.imports, ins(str(module), str(name), byte(0), uleb(t)))
	m.numImpF++
	return m.numImpF - 1
}

// fn adds a function and returns its index; code excludes the final end.
func (m *tmod) fn(params, results, locals []byte, code ...any) uint32 {
	m.funcs = append(m.funcs, tfunc{typ: m.typ(params, results), locals: locals, code: ins(append(code, byte(opEnd))...)})
	return m.numImpF + uint32(len(m.funcs)-1)
}

// setCode replaces the code of function f, for functions that call each
// other.
func (m *tmod) setCode(f uint32, code ...any) {
	m.funcs[f-m.numImpF].code = ins(append(code, byte(opEnd))...)
}

func (m *tmod) export(name string, kind byte, idx uint32) {
	m.exports = append(m.exports, ins(str(name), kind, uleb(idx)))
}

func (m *tmod) exportFn(name string, f uint32) { m.export(name, 0, f) }

func (m *tmod) memory(min uint32) {
	m.mems = append(m.mems, ins(byte(0), uleb(min)))
	m.export("memory", 2, 0)
}

func (m *tmod) table(ref byte, min uint32) uint32 {
	m.tables = append(m.tables, ins(ref, byte(0), uleb(min)))
	return uint32(len(m.tables) - 1)
}

func (m *tmod) global(t byte, mutable bool, init ...any) uint32 {
	mut := byte(0)
	if mutable {
		mut = 1
	}
	m.globals = append(m.globals, ins(t, mut, ins(init...), byte(opEnd)))
	return uint32(len(m.globals) - 1)
}

func vec(entries [][]byte) []byte {
	b := uleb(uint32(len(entries)))
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

func (m *tmod) bytes() []byte {
	out := append([]byte{}, wasmHeader...)
	sec := func(id byte, payload []byte) {
		out = appendSection(out, id, payload)
	}
	if len(m.types) > 0 {
		sec(secType, vec(m.types))
	}
	if len(m.imports) > 0 {
		sec(secImport, vec(m.imports))
	}
	if len(m.funcs) > 0 {
		var fs [][]byte
		for _, f := range m.funcs {
			fs = append(fs, uleb(f.typ))
		}
		sec(secFunction, vec(fs))
	}
	if len(m.tables) > 0 {
		sec(secTable, vec(m.tables))
	}
	if len(m.mems) > 0 {
		sec(secMemory, vec(m.mems))
	}
	if len(m.globals) > 0 {
		sec(secGlobal, vec(m.globals))
	}
	if len(m.exports) > 0 {
		sec(secExport, vec(m.exports))
	}
	if m.start >= 0 {
		sec(secStart, uleb(uint32(m.start)))
	}
	if len(m.elems) > 0 {
		sec(secElement, vec(m.elems))
	}
	if m.dataCount {
		sec(secDataCount, uleb(uint32(len(m.datas))))
	}
	if len(m.funcs) > 0 {
		var bodies [][]byte
		for _, f := range m.funcs {
			var locals [][]byte
			for _, t := range f.locals {
				locals = append(locals, []byte{1, t})
			}
			body := append(vec(locals), f.code...)
			bodies = append(bodies, append(uleb(uint32(len(body))), body...))
		}
		sec(secCode, vec(bodies))
	}
	if len(m.datas) > 0 {
		sec(secData, vec(m.datas))
	}
	for _, c := range m.customs {
		sec(secCustom, c)
	}
	return out
}

// ins concatenates instruction parts: bytes, ints (one byte each), uint32
// indices (LEB128) and byte slices.
func ins(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case byte:
			b = append(b, p)
		case int:
			if p < 0 || p > 255 {
				panic(fmt.Sprintf("ins: %d is not a byte", p))
			}
			b = append(b, byte(p))
		case uint32: // an index
			b = appendU32(b, p)
		case []byte:
			b = append(b, p...)
		case string:
			b = append(b, p...)
		default:
			panic(fmt.Sprintf("ins: %T", p))
		}
	}
	return b
}

func uleb(v uint32) []byte         { return appendU32(nil, v) }
func sleb(v int64) []byte          { return appendS64(nil, v) }
func str(s string) []byte          { return appendName(nil, s) }
func i32c(v int32) []byte          { return ins(opI32Const, sleb(int64(v))) }
func i64c(v int64) []byte          { return ins(opI64Const, sleb(v)) }
func lget(i uint32) []byte         { return ins(opLocalGet, uleb(i)) }
func lset(i uint32) []byte         { return ins(opLocalSet, uleb(i)) }
func gget(i uint32) []byte         { return ins(opGlobalGet, uleb(i)) }
func gset(i uint32) []byte         { return ins(opGlobalSet, uleb(i)) }
func call(f uint32) []byte         { return ins(opCall, uleb(f)) }
func br(l uint32) []byte           { return ins(0x0C, uleb(l)) }
func brIf(l uint32) []byte         { return ins(0x0D, uleb(l)) }
func block(bt byte) []byte         { return []byte{opBlock, bt} }
func loop(bt byte) []byte          { return []byte{opLoop, bt} }
func iff(bt byte) []byte           { return []byte{opIf, bt} }
func mem(align, off uint32) []byte { return ins(uleb(align), uleb(off)) }
func misc(sub uint32, imm ...any) []byte {
	return ins(byte(opPrefixMisc), uleb(sub), ins(imm...))
}
func simdOp(sub uint32, imm ...any) []byte  { return ins(byte(0xFD), uleb(sub), ins(imm...)) }
func callIndirect(typ, table uint32) []byte { return ins(0x11, uleb(typ), uleb(table)) }
func refFunc(f uint32) []byte               { return ins(opRefFunc, uleb(f)) }

var (
	none  = []byte{}
	i32   = []byte{valI32}
	i64   = []byte{valI64}
	i32x2 = []byte{valI32, valI32}
)

const (
	opI32Add   = 0x6A
	opI32Sub   = 0x6B
	opI32Mul   = 0x6C
	opI32DivS  = 0x6D
	opI32Eqz   = 0x45
	opI32LtS   = 0x48
	opI32Load  = 0x28
	opI32Store = 0x36
	opDrop     = 0x1A
	opReturn   = 0x0F
	opBrTable  = 0x0E
	opSelect   = 0x1B
)

// nameSection builds a "name" custom section payload with function names
// and one local name per named function.
func nameSection(module string, funcs map[uint32]string, maxFunc uint32) []byte {
	b := str("name")
	sub := str(module)
	b = append(append(append(b, 0), uleb(uint32(len(sub)))...), sub...)
	var fn, locals [][]byte
	for f := uint32(0); f <= maxFunc; f++ {
		if n, ok := funcs[f]; ok {
			fn = append(fn, ins(uleb(f), str(n)))
			locals = append(locals, ins(uleb(f), uleb(1), uleb(0), str(n+"_arg")))
		}
	}
	sub = vec(fn)
	b = append(append(append(b, 1), uleb(uint32(len(sub)))...), sub...)
	sub = vec(locals)
	b = append(append(append(b, 2), uleb(uint32(len(sub)))...), sub...)
	// Label names, which the rewrite drops.
	sub = vec([][]byte{ins(uleb(0), vec(nil))})
	b = append(append(append(b, 3), uleb(uint32(len(sub)))...), sub...)
	return b
}

package wasmmeter

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// withCode is a module with one exported function () -> () whose body is
// code (raw, without the final end), a memory and a table.
func withCode(code ...any) []byte {
	m := newMod()
	m.memory(1)
	m.table(valFuncref, 1)
	m.exportFn("f", m.fn(none, none, nil, code...))
	return m.bytes()
}

func TestRefusesProposalsTheHostDoesNotEnable(t *testing.T) {
	sharedMemory := newMod()
	sharedMemory.mems = append(sharedMemory.mems, []byte{0x03, 1, 1})
	memory64 := newMod()
	memory64.mems = append(memory64.mems, []byte{0x04, 1})
	twoMemories := newMod()
	twoMemories.memory(1)
	twoMemories.mems = append(twoMemories.mems, []byte{0x00, 1})
	gcType := newMod()
	gcType.types = append(gcType.types, []byte{0x5F, 0})
	typedRefParam := newMod()
	typedRefParam.typ([]byte{0x64, 0x70}, none)
	extendedConst := newMod()
	extendedConst.global(valI32, false, i32c(1), i32c(2), opI32Add)
	tag := append(newMod().bytes(), secTag, 3, 1, 0, 0)
	tagImport := newMod()
	tagImport.imports = append(tagImport.imports, ins(str("m"), str("t"), byte(4), byte(0), uleb(0)))

	cases := []struct {
		name, proposal string
		wasm           []byte
	}{
		{"atomic", "threads", withCode(0xFE, uleb(3), byte(0))},
		{"shared memory", "threads", sharedMemory.bytes()},
		{"try", "exception handling", withCode(0x06, blockEmpty, opEnd)},
		{"throw", "exception handling", withCode(0x08, uleb(0))},
		{"tag section", "exception handling", tag},
		{"tag import", "exception handling", tagImport.bytes()},
		{"memory64", "memory64", memory64.bytes()},
		{"two memories", "multi-memory", twoMemories.bytes()},
		{"memarg memory index", "multi-memory", withCode(i32c(0), opI32Load, uleb(0x42), uleb(1), uleb(0), opDrop)},
		{"memory.size 1", "multi-memory", withCode(0x3F, 1, opDrop)},
		{"gc struct type", "GC", gcType.bytes()},
		{"ref.eq", "GC", withCode(0xD5)},
		{"typed ref value", "typed function references", typedRefParam.bytes()},
		{"call_ref", "typed function references", withCode(0x14, uleb(0))},
		{"return_call", "tail call", withCode(0x12, uleb(0))},
		{"return_call_indirect", "tail call", withCode(0x13, uleb(0), uleb(0))},
		{"extended const", "extended constant expressions", extendedConst.bytes()},
		{"relaxed simd", "relaxed SIMD", withCode(simdOp(0x100))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Instrument(c.wasm, Options{})
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want a refusal", err)
			}
			want := "the module uses the " + c.proposal + " proposal, which the host does not enable"
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		})
	}
}

func TestRefusesWhatIsOverTheLimits(t *testing.T) {
	manyFuncs := newMod()
	manyFuncs.typ(none, none)
	fs := append(uleb(maxFunctions+1), bytes.Repeat([]byte{0}, maxFunctions+1)...)
	manyFuncsWasm := appendSection(append([]byte{}, wasmHeader...), secType, vec(manyFuncs.types))
	manyFuncsWasm = appendSection(manyFuncsWasm, secFunction, fs)

	manyLocals := newMod()
	manyLocals.fn(none, none, nil)
	manyLocals.funcs[0].locals = nil
	w := manyLocals.bytes()
	// Replace the body: one group of maxLocals+1 i32 locals.
	body := ins(uleb(1), uleb(maxLocals+1), valI32, opEnd)
	manyLocalsWasm := replaceCode(t, w, body)

	deep := ins(bytes.Repeat(block(blockEmpty), maxDepth), bytes.Repeat([]byte{opEnd}, maxDepth))
	big := bytes.Repeat([]byte{0x01}, maxBodySize) // nop
	// Each `loop end` gains a checked charge point and a charge point.
	blowup := bytes.Repeat(ins(loop(blockEmpty), opEnd), 60_000)

	cases := []struct {
		name string
		wasm []byte
	}{
		{"functions", manyFuncsWasm},
		{"locals", manyLocalsWasm},
		{"nesting", withCode(deep)},
		{"body size", withCode(big)},
		{"output size", withCode(blowup)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Instrument(c.wasm, Options{})
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("got %v, want a limit error", err)
			}
		})
	}
	// Just under the nesting limit is fine.
	ok := ins(bytes.Repeat(block(blockEmpty), maxDepth-1), bytes.Repeat([]byte{opEnd}, maxDepth-1))
	if _, err := Instrument(withCode(ok), Options{}); err != nil {
		t.Errorf("nesting of %d: %v", maxDepth-1, err)
	}
}

// replaceCode swaps the body of the only function of wasm.
func replaceCode(t *testing.T, wasm, body []byte) []byte {
	m, err := parseModule(wasm)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte{}, wasmHeader...)
	for _, s := range m.sections {
		p := s.payload
		if s.id == secCode {
			p = vec([][]byte{append(uleb(uint32(len(body))), body...)})
		}
		out = appendSection(out, s.id, p)
	}
	return out
}

// The guest must not reach what the rewrite adds: indices one past the
// original spaces would name the fuel global, a meter import, a wrapper or
// a scratch local.
func TestRefusesIndicesIntoAddedSpaces(t *testing.T) {
	meterImport := newMod()
	meterImport.importFunc(ImportModule, YieldName, i64, i64)
	withGlobal := func(code ...any) []byte {
		m := newMod()
		m.global(valI64, true, i64c(0))
		m.exportFn("f", m.fn(i32, none, i32, code...))
		return m.bytes()
	}
	// Every space, one past its end.
	withAll := func(code ...any) []byte {
		m := newMod()
		m.memory(1)
		m.table(valFuncref, 1)
		m.global(valI64, true, i64c(0))
		m.elems = append(m.elems, ins(byte(1), byte(0), uleb(0)))
		m.datas = append(m.datas, ins(byte(1), str("x")))
		m.dataCount = true
		m.exportFn("f", m.fn(i32, none, i32, code...))
		return m.bytes()
	}
	badExport := newMod()
	badExport.fn(none, none, nil)
	badExport.exportFn("wrapper", 1)
	badStart := newMod()
	badStart.fn(none, none, nil)
	badStart.start = 1
	badElem := newMod()
	badElem.table(valFuncref, 1)
	badElem.fn(none, none, nil)
	badElem.elems = append(badElem.elems, ins(byte(0), i32c(0), opEnd, uleb(1), uleb(1)))
	badElemExpr := newMod()
	badElemExpr.fn(none, none, nil)
	badElemExpr.elems = append(badElemExpr.elems, ins(byte(7), valFuncref, uleb(1), refFunc(1), opEnd))
	badFuncType := newMod()
	badFuncType.fn(none, none, nil)
	badFuncType.funcs[0].typ = 1
	noMemory := newMod()
	noMemory.exportFn("f", noMemory.fn(none, i32, nil, 0x3F, 0))
	constGlobal := newMod()
	constGlobal.global(valI64, false, gget(1))
	cases := []struct {
		name, want string
		wasm       []byte
	}{
		{"global.set", "global 1 out of range", withGlobal(i64c(1), gset(1))},
		{"global.get in init", "global 1 out of range", constGlobal.bytes()},
		{"call", "function 1 out of range", withGlobal(call(1))},
		{"ref.func", "function 2 out of range", withGlobal(refFunc(2), opDrop)},
		{"local", "local 2 out of range", withGlobal(lget(2), opDrop)},
		{"block type", "block type 1 out of range", withGlobal(opBlock, uleb(1), opEnd)},
		{"call_indirect type", "type 1 out of range", withGlobal(callIndirect(1, 0))},
		{"meter import", "imports from " + ImportModule, meterImport.bytes()},
		{"global.get fuel", "global 1 out of range", withAll(gget(1), opDrop)},
		{"global.set fuel", "global 1 out of range", withAll(i64c(1<<40), gset(1))},
		{"local.set scratch", "local 2 out of range", withAll(i32c(0), lset(2))},
		{"local.tee scratch", "local 2 out of range", withAll(i32c(0), opLocalTee, uleb(2), opDrop)},
		{"call meter import", "function 1 out of range", withAll(i64c(0), call(1), opDrop)},
		{"table", "table 1 out of range", withAll(i32c(0), 0x25, uleb(1), opDrop)},
		{"table.grow", "table 1 out of range", withAll(0xD0, valFuncref, i32c(0), misc(15, uint32(1)), opDrop)},
		{"elem.drop declarative", "element segment 1 out of range", withAll(misc(13, uint32(1)))},
		{"table.init", "element segment 1 out of range", withAll(i32c(0), i32c(0), i32c(0), misc(12, uint32(1), uint32(0)))},
		{"data.drop", "data segment 1 out of range", withAll(misc(9, uint32(1)))},
		{"memory.init", "data segment 1 out of range", withAll(i32c(0), i32c(0), i32c(0), misc(8, uint32(1), 0))},
		{"no memory", "without memory", noMemory.bytes()},
		{"export", "index 1 out of range", badExport.bytes()},
		{"start", "start function 1 out of range", badStart.bytes()},
		{"element item", "function 1 out of range", badElem.bytes()},
		{"element expr", "function 1 out of range", badElemExpr.bytes()},
		{"function type", "type 1 out of range", badFuncType.bytes()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Instrument(c.wasm, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

func TestErrorsSayWhere(t *testing.T) {
	m := newMod()
	m.fn(none, none, nil)
	m.fn(none, none, nil, 0xFE, uleb(0))
	_, err := Instrument(m.bytes(), Options{})
	if err == nil || !strings.Contains(err.Error(), "function 1 (body at offset 0x") {
		t.Errorf("error %v does not name the function and its offset", err)
	}
}

// Every prefix of a valid module is refused or rewritten into a module
// that validates when the prefix does.
func TestTruncatedModules(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	for _, c := range moduleCases() {
		wasm := c.build().bytes()
		for n := 0; n < len(wasm); n++ {
			checkInstrument(t, r, wasm[:n])
		}
	}
}

// checkInstrument is the fuzz property: Instrument neither panics nor
// grows its input past the bound, and what it returns validates whenever
// the input does.
func checkInstrument(t *testing.T, r wazero.Runtime, in []byte) {
	ctx := context.Background()
	for _, opts := range []Options{{}, {MemoryBudget: 1 << 30}} {
		out, err := Instrument(in, opts)
		if err != nil {
			continue
		}
		if len(out) > outputFactor*len(in)+outputSlack {
			t.Fatalf("%d bytes in, %d out", len(in), len(out))
		}
		orig, err := r.CompileModule(ctx, in)
		if err != nil {
			continue
		}
		orig.Close(ctx)
		metered, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("the input validates, the output does not: %v", err)
		}
		metered.Close(ctx)
	}
}

func FuzzInstrument(f *testing.F) {
	for _, c := range moduleCases() {
		f.Add(c.build().bytes())
	}
	paths, _ := filepath.Glob("testdata/smith/*.wasm")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	f.Fuzz(func(t *testing.T, in []byte) {
		checkInstrument(t, r, in)
	})
}

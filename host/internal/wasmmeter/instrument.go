package wasmmeter

import (
	"fmt"
)

// ImportModule is the import module of the meter functions the instrumented
// module calls.
const ImportModule = "anvil:host/meter"

// Names of the three meter functions, all in ImportModule and all of type
// (i64) -> i64:
//
//   - enter(outer) is called first by every export wrapper with the counter's
//     value before the call (an outer call's remaining fuel, or zero at top
//     level); it returns the counter to run with.
//   - yield(remaining) is called when the counter went below zero, with the
//     counter (zero or negative); it returns the new counter. The host may
//     panic here (deadline passed, fuel exhausted): that aborts the Wasm call.
//   - leave(remaining) is called when an export wrapper's callee returned
//     normally, with the counter; it returns the counter to restore (an outer
//     call's).
const (
	EnterName = "enter"
	YieldName = "yield"
	LeaveName = "leave"
)

// numMeterFuncs is the number of meter imports, by which every defined
// function's index shifts.
const numMeterFuncs = 3

// TableElementBytes is what one table element counts against
// Options.MemoryBudget.
const TableElementBytes = 8

// Import names a function import.
type Import struct{ Module, Name string }

// Options tune Instrument.
type Options struct {
	// MemoryBudget, in bytes, bounds linear memory (memory.size*65536) plus
	// table elements times TableElementBytes: at load, over the declared
	// minimums, Instrument refuses the module; at run time, a memory.grow or
	// table.grow that would pass it returns -1, as the spec allows any grow
	// to do. Zero means no budget, and grows are left as they are.
	MemoryBudget uint64
	// Redirect renames the import module of the listed function imports (the
	// name stays). The host uses it to send a guest's Extism kernel imports
	// to host functions that validate them.
	Redirect map[Import]string
}

// Instrument returns the metered module (see the package documentation). It
// refuses, with an error, anything malformed, anything over the structural
// limits, and features the host does not enable. It does not validate the
// module beyond what it reads: the runtime compiling the result does that.
func Instrument(wasm []byte, opts Options) ([]byte, error) {
	out, err := instrument(wasm, opts)
	if err != nil {
		return nil, fmt.Errorf("wasmmeter: %w", err)
	}
	return out, nil
}

func instrument(in []byte, opts Options) ([]byte, error) {
	m, err := parseModule(in)
	if err != nil {
		return nil, err
	}
	if opts.MemoryBudget != 0 {
		var tableBytes uint64
		for _, t := range m.tables {
			tableBytes += uint64(t.min) * TableElementBytes
		}
		memBytes := m.memMinPages * 65536
		if memBytes+tableBytes > opts.MemoryBudget {
			return nil, fmt.Errorf("%w: the module declares %d bytes of memory (%d pages) and %d bytes of tables, over the memory budget of %d bytes",
				ErrLimit, memBytes, m.memMinPages, tableBytes, opts.MemoryBudget)
		}
	}
	limit := outputFactor*len(in) + outputSlack

	numFuncs := m.numFuncs()
	enter := m.numImportedFuncs
	fuel := m.numGlobals

	// One wrapper per exported function, in export order.
	wrapped := make([]int32, numFuncs)
	for i := range wrapped {
		wrapped[i] = -1
	}
	var wrappers []uint32 // original index of each wrapper's callee
	for _, e := range m.exports {
		if e.kind == 0x00 && wrapped[e.idx] < 0 {
			wrapped[e.idx] = int32(len(wrappers))
			wrappers = append(wrappers, e.idx)
		}
	}
	wrapperIndex := func(f uint32) uint32 {
		return numFuncs + numMeterFuncs + uint32(wrapped[f])
	}

	w := newBodyRewriter(m, opts.MemoryBudget, fuel, enter+1, wrapped)
	w.declare = make([]bool, numFuncs)

	// Code first: the element section depends on what the code names.
	codeSec := m.section(secCode)
	numDefined := len(m.funcTypes) - int(m.numImportedFuncs)
	var code []byte
	if codeSec != nil || numDefined > 0 || len(wrappers) > 0 {
		if codeSec == nil && numDefined > 0 {
			return nil, fmt.Errorf("%d functions declared but no code section", numDefined)
		}
		code = make([]byte, 0, len(in)+len(in)/2)
		code = appendU32(code, uint32(numDefined+len(wrappers)))
		if codeSec != nil {
			if code, err = m.rewriteCode(code, codeSec, w, limit); err != nil {
				return nil, err
			}
		}
		for _, f := range wrappers {
			code = m.appendWrapper(code, f, w)
			if len(code) > limit {
				return nil, fmt.Errorf("%w: the metered module would exceed %d bytes", ErrLimit, limit)
			}
		}
	}

	// The meter type, appended unless the module has it.
	meterType := uint32(m.meterType)
	var types []byte
	if m.meterType < 0 {
		meterType = m.numTypes
		types = appendU32(nil, m.numTypes+1)
		if s := m.section(secType); s != nil {
			r := s.reader()
			r.u32() // the count, read once already by parseTypes
			types = append(types, s.payload[r.off:]...)
		}
		types = append(types, meterTypeBytes...)
	}

	imports := m.rewriteImports(meterType, opts.Redirect)

	var functions []byte
	if m.section(secFunction) != nil || numDefined > 0 || len(wrappers) > 0 {
		functions = appendU32(nil, uint32(numDefined+len(wrappers)))
		if s := m.section(secFunction); s != nil {
			r := s.reader()
			r.u32() // the count, read once already by parseFunctions
			functions = append(functions, s.payload[r.off:]...)
		}
		for _, f := range wrappers {
			functions = appendU32(functions, m.funcTypes[f])
		}
	}

	c := &constRewriter{m: m, remap: w.remap}
	globals, err := c.rewriteGlobals(m.section(secGlobal))
	if err != nil {
		return nil, err
	}

	var exports []byte
	if s := m.section(secExport); s != nil {
		exports = appendU32(nil, uint32(len(m.exports)))
		for _, e := range m.exports {
			exports = appendU32(exports, uint32(len(e.name)))
			exports = append(append(exports, e.name...), e.kind)
			idx := e.idx
			if e.kind == 0x00 {
				idx = wrapperIndex(idx)
			}
			exports = appendU32(exports, idx)
		}
	}

	var start []byte
	if m.hasStart {
		start = appendU32(nil, w.remap(m.start))
	}

	var declared []uint32
	if w.numDeclare > 0 {
		for f, d := range w.declare {
			if d {
				declared = append(declared, w.remap(uint32(f)))
			}
		}
	}
	elements, err := c.rewriteElements(m.section(secElement), declared)
	if err != nil {
		return nil, err
	}

	payloads := [numSecIDs][]byte{
		secType:     types,
		secImport:   imports,
		secFunction: functions,
		secGlobal:   globals,
		secExport:   exports,
		secStart:    start,
		secElement:  elements,
		secCode:     code,
	}
	// What the rewrite leaves alone (the type section too when it already
	// has the meter type).
	for _, id := range []byte{secType, secTable, secMemory, secData, secDataCount} {
		if payloads[id] != nil {
			continue
		}
		if s := m.section(id); s != nil {
			payloads[id] = s.payload
		}
	}
	return m.assemble(payloads, numFuncs, wrapped, len(wrappers), limit)
}

// assemble writes the sections in their required order. Sections of the
// input keep their place among the custom sections; new ones go just before
// the first section of the input that must follow them.
func (m *module) assemble(payloads [numSecIDs][]byte, numFuncs uint32, wrapped []int32, numWrappers int, limit int) ([]byte, error) {
	size := len(wasmHeader)
	for _, p := range payloads {
		size += len(p) + 6
	}
	for _, s := range m.sections {
		if s.id == secCustom {
			size += len(s.payload) + 6
		}
	}
	out := make([]byte, 0, size)
	out = append(out, wasmHeader...)
	var done [numSecIDs]bool
	// New sections go before the first section of the input that must
	// follow them.
	emitNewBefore := func(rank int) {
		for _, id := range sectionsByRank {
			if sectionRank[id] < rank && !done[id] && m.index[id] < 0 && payloads[id] != nil {
				out = appendSection(out, id, payloads[id])
				done[id] = true
			}
		}
	}
	for i := range m.sections {
		s := &m.sections[i]
		if s.id != secCustom {
			emitNewBefore(sectionRank[s.id])
			out = appendSection(out, s.id, payloads[s.id])
			done[s.id] = true
			continue
		}
		r := s.reader()
		name, err := r.name()
		if err != nil {
			return nil, fmt.Errorf("custom section at offset %#x: name: %w", s.off, err)
		}
		if name != "name" {
			out = appendSection(out, secCustom, s.payload)
			continue
		}
		if names := m.rewriteNames(s.payload[:r.off], r, numFuncs, wrapped, numWrappers); names != nil {
			out = appendSection(out, secCustom, names)
		}
	}
	emitNewBefore(len(sectionRank) + 1)
	if len(out) > limit {
		return nil, fmt.Errorf("%w: the metered module would have %d bytes, over %d", ErrLimit, len(out), limit)
	}
	return out, nil
}

func (m *module) rewriteCode(dst []byte, s *section, w *bodyRewriter, limit int) ([]byte, error) {
	r := s.reader()
	n, err := r.count(1)
	if err != nil {
		return nil, fmt.Errorf("code section (at offset %#x): %w", s.off, err)
	}
	numDefined := len(m.funcTypes) - int(m.numImportedFuncs)
	if n != numDefined {
		return nil, fmt.Errorf("code section (at offset %#x): %d bodies for %d functions", s.off, n, numDefined)
	}
	for i := 0; i < n; i++ {
		fn := m.numImportedFuncs + uint32(i)
		at := r.pos()
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("function %d (body at offset %#x): %w", fn, at, err)
		}
		bodyOff := r.pos()
		body, err := r.bytes(int(size))
		if err != nil {
			return nil, fmt.Errorf("function %d (body at offset %#x): size %d exceeds the section", fn, at, size)
		}
		if dst, err = w.rewrite(dst, fn, body, bodyOff, limit); err != nil {
			return nil, fmt.Errorf("function %d (body at offset %#x): %w", fn, at, err)
		}
	}
	if !r.eof() {
		return nil, fmt.Errorf("code section (at offset %#x): %d bytes after the last body", s.off, r.remaining())
	}
	return dst, nil
}

// appendWrapper appends the body of the export wrapper of function f: it
// brackets the call with enter and leave so the host can give each call from
// outside its own budget.
func (m *module) appendWrapper(dst []byte, f uint32, w *bodyRewriter) []byte {
	enter := m.numImportedFuncs
	b := w.body[:0]
	b = append(b, 0) // no locals
	b = append(b, w.getFuel...)
	b = appendU32(append(b, opCall), enter)
	b = append(b, w.setFuel...)
	for i := uint32(0); i < m.numParams[m.funcTypes[f]]; i++ {
		b = appendU32(append(b, opLocalGet), i)
	}
	b = appendU32(append(b, opCall), w.remap(f))
	b = append(b, w.getFuel...)
	b = appendU32(append(b, opCall), enter+2)
	b = append(b, w.setFuel...)
	b = append(b, opEnd)
	w.body = b
	dst = appendU32(dst, uint32(len(b)))
	return append(dst, b...)
}

func (m *module) rewriteImports(meterType uint32, redirect map[Import]string) []byte {
	s := m.section(secImport)
	b := appendU32(nil, uint32(len(m.imports)+numMeterFuncs))
	for _, e := range m.imports {
		if to, ok := redirect[Import{e.module, e.name}]; ok && e.kind == 0x00 {
			b = appendName(b, to)
			b = append(b, s.payload[e.afterModule:e.end]...)
			continue
		}
		b = append(b, s.payload[e.start:e.end]...)
	}
	for _, name := range [numMeterFuncs]string{EnterName, YieldName, LeaveName} {
		b = appendName(b, ImportModule)
		b = appendName(b, name)
		b = appendU32(append(b, 0x00), meterType)
	}
	return b
}

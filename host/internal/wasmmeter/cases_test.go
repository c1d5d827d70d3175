package wasmmeter

// The modules below exercise every construct the rewrite touches. Each
// builds a fresh module; exported functions are called by the tests with
// the listed arguments.

type moduleCase struct {
	name  string
	build func() *tmod
	calls []testCall
}

func args(name string, a ...uint64) testCall { return testCall{name: name, args: a} }

// loopSum: sum(n) = n + (n-1) + ... + 1 with a loop and a br_if out of it.
func loopSum() *tmod {
	m := newMod()
	f := m.fn(i32, i32, i32,
		block(blockEmpty), loop(blockEmpty),
		lget(0), opI32Eqz, brIf(1),
		lget(1), lget(0), opI32Add, lset(1),
		lget(0), i32c(1), opI32Sub, lset(0),
		br(0),
		opEnd, opEnd,
		lget(1))
	m.exportFn("sum", f)
	return m
}

func fib() *tmod {
	m := newMod()
	f := m.fn(i32, i32, nil)
	m.setCode(f,
		lget(0), i32c(2), opI32LtS,
		iff(valI32), lget(0),
		opElse,
		lget(0), i32c(1), opI32Sub, call(f),
		lget(0), i32c(2), opI32Sub, call(f),
		opI32Add,
		opEnd)
	m.exportFn("fib", f)
	return m
}

// callTree: n functions, each calling the next twice and adding the
// results; the last returns 1. No loops anywhere.
func callTree(n int) *tmod {
	m := newMod()
	first := uint32(0)
	for i := 0; i < n; i++ {
		if i == n-1 {
			m.fn(none, i32, nil, i32c(1))
			break
		}
		next := uint32(i + 1)
		m.fn(none, i32, nil, call(next), call(next), opI32Add)
	}
	m.exportFn("tree", first)
	return m
}

func brTable() *tmod {
	m := newMod()
	f := m.fn(i32, i32, nil,
		block(blockEmpty), block(blockEmpty), block(blockEmpty),
		lget(0), opBrTable, uleb(2), uleb(0), uleb(1), uleb(2),
		opEnd, i32c(10), opReturn,
		opEnd, i32c(20), opReturn,
		opEnd, i32c(30))
	m.exportFn("switch", f)
	return m
}

func multiValue() *tmod {
	m := newMod()
	pair := m.typ(i32x2, i32x2)
	// swapAdd(a, b) = (a+b, a-b) computed inside a block that takes and
	// returns two values.
	inner := m.fn(i32x2, i32x2, nil, lget(0), lget(1), opI32Add, lget(0), lget(1), opI32Sub)
	f := m.fn(i32x2, i32x2, nil,
		lget(0), lget(1),
		opBlock, uleb(pair),
		call(inner),
		opEnd,
		opBlock, uleb(pair),
		br(0),
		opEnd)
	m.exportFn("mv", f)
	return m
}

func ifElse() *tmod {
	m := newMod()
	abs := m.fn(i32, i32, nil,
		lget(0), i32c(0), opI32LtS,
		iff(valI32), i32c(0), lget(0), opI32Sub,
		opElse, lget(0),
		opEnd)
	// An if without else and an empty else.
	clamp := m.fn(i32, i32, nil,
		lget(0), i32c(100), 0x4A, // i32.gt_s
		iff(blockEmpty), i32c(100), lset(0), opEnd,
		lget(0), i32c(0), opI32LtS,
		iff(blockEmpty), i32c(0), lset(0), opElse, opEnd,
		lget(0))
	m.exportFn("abs", abs)
	m.exportFn("clamp", clamp)
	return m
}

// deadCode puts every rewritten instruction after br, return and
// unreachable, where the operand stack is polymorphic.
func deadCode() *tmod {
	m := newMod()
	m.memory(1)
	m.table(valFuncref, 1)
	g := m.fn(none, i32, nil, i32c(7))
	junk := ins(
		call(g), opDrop,
		loop(blockEmpty), opEnd,
		misc(11, 0), // memory.fill
		misc(10, 0, 0),
		i32c(1), 0x40, 0, opDrop, // memory.grow
		0xD0, valFuncref, i32c(1), misc(15, 0), opDrop, // table.grow
		misc(15, 0), opDrop,
		0x40, 0, opDrop,
		misc(17, 0),
		callIndirect(m.typ(none, i32), 0), opDrop,
		block(blockEmpty), opEnd,
	)
	afterBr := m.fn(none, i32, nil, block(valI32), i32c(5), br(0), junk, opEnd)
	afterReturn := m.fn(none, i32, nil, i32c(6), opReturn, junk)
	afterUnreachable := m.fn(none, i32, nil, opUnreachable, junk)
	inIf := m.fn(i32, i32, nil,
		lget(0), iff(valI32), i32c(1), br(0), junk, opElse, i32c(2), opReturn, junk, opEnd)
	m.exportFn("br", afterBr)
	m.exportFn("return", afterReturn)
	m.exportFn("unreachable", afterUnreachable)
	m.exportFn("if", inIf)
	return m
}

func simdModule() *tmod {
	m := newMod()
	m.memory(1)
	v128 := []byte{valV128}
	shuffle := make([]byte, 16)
	for i := range shuffle {
		shuffle[i] = byte(15 - i)
	}
	c := make([]byte, 16)
	for i := range c {
		c[i] = byte(i + 1)
	}
	f := m.fn(i32x2, i32, v128,
		lget(0), simdOp(17), // i32x4.splat
		lget(1), simdOp(28, 2), // i32x4.replace_lane 2
		simdOp(12, c), // v128.const
		simdOp(174),   // i32x4.add
		simdOp(12, c),
		simdOp(13, shuffle),
		lset(2),
		i32c(16), lget(2), simdOp(11, mem(4, 0)), // v128.store
		i32c(32), i32c(16), simdOp(0, mem(4, 0)), simdOp(11, mem(4, 0)),
		i32c(16), lget(2), simdOp(90, mem(2, 40), 1), // v128.store32_lane
		i32c(16), i32c(60), simdOp(92, mem(2, 0)), // v128.load32_zero
		simdOp(86, mem(2, 0), 3), // v128.load32_lane lane 3
		simdOp(27, 3),            // i32x4.extract_lane 3
		lget(2), simdOp(27, 0),
		opI32Add)
	m.exportFn("simd", f)
	return m
}

func bulkMemory() *tmod {
	m := newMod()
	m.memory(1)
	m.datas = append(m.datas,
		ins(byte(1), str("hello, world")), // passive
		ins(byte(0), i32c(200), opEnd, str("active")))
	m.dataCount = true
	initF := m.fn(i32x2, none, nil, lget(0), i32c(0), lget(1), misc(8, 0, 0))
	copyF := m.fn([]byte{valI32, valI32, valI32}, none, nil, lget(0), lget(1), lget(2), misc(10, 0, 0))
	fill := m.fn([]byte{valI32, valI32, valI32}, none, nil, lget(0), lget(1), lget(2), misc(11, 0))
	drop := m.fn(none, none, nil, misc(9, 0))
	grow := m.fn(i32, i32, nil, lget(0), 0x40, 0)
	size := m.fn(none, i32, nil, 0x3F, 0)
	m.exportFn("init", initF)
	m.exportFn("copy", copyF)
	m.exportFn("fill", fill)
	m.exportFn("drop", drop)
	m.exportFn("grow", grow)
	m.exportFn("size", size)
	return m
}

func refTypes() *tmod {
	m := newMod()
	funcs := m.table(valFuncref, 2)
	externs := m.table(valExternref, 1)
	ret := m.typ(none, i32)
	a := m.fn(none, i32, nil, i32c(11))
	b := m.fn(none, i32, nil, i32c(22))
	// declare a and b for ref.func
	m.elems = append(m.elems, ins(byte(3), byte(0), uleb(2), uleb(a), uleb(b)))
	grow := m.fn(i32, i32, nil, refFunc(a), lget(0), misc(15, funcs))
	growExtern := m.fn(i32, i32, nil, 0xD0, valExternref, lget(0), misc(15, externs))
	size := m.fn(none, i32, nil, misc(16, funcs), misc(16, externs), i32c(100), opI32Mul, opI32Add)
	set := m.fn(i32, none, nil, lget(0), refFunc(b), 0x26, uleb(funcs))
	callAt := m.fn(i32, i32, nil, lget(0), callIndirect(ret, funcs))
	isNull := m.fn(i32, i32, nil, lget(0), 0x25, uleb(funcs), 0xD1)
	fill := m.fn([]byte{valI32, valI32}, none, nil, lget(0), refFunc(a), lget(1), misc(17, funcs))
	copyT := m.fn([]byte{valI32, valI32, valI32}, none, nil, lget(0), lget(1), lget(2), misc(14, funcs, funcs))
	sel := m.fn(i32, i32, nil,
		refFunc(a), 0xD0, valFuncref, lget(0), 0x1C, uleb(1), valFuncref, 0xD1)
	for name, f := range map[string]uint32{
		"grow": grow, "growExtern": growExtern, "size": size, "set": set, "call": callAt,
		"isNull": isNull, "fill": fill, "copy": copyT, "select": sel,
	} {
		m.exportFn(name, f)
	}
	return m
}

// elements uses every element segment encoding (flags 0 to 7).
func elements() *tmod {
	m := newMod()
	t0 := m.table(valFuncref, 8)
	t1 := m.table(valFuncref, 4)
	ret := m.typ(none, i32)
	var fs [6]uint32
	for i := range fs {
		fs[i] = m.fn(none, i32, nil, i32c(int32(100+i)))
	}
	m.elems = append(m.elems,
		ins(byte(0), i32c(0), opEnd, uleb(2), uleb(fs[0]), uleb(fs[1])),
		ins(byte(1), byte(0), uleb(1), uleb(fs[2])),
		ins(byte(2), uleb(t1), i32c(0), opEnd, byte(0), uleb(1), uleb(fs[3])),
		ins(byte(3), byte(0), uleb(1), uleb(fs[4])),
		ins(byte(4), i32c(2), opEnd, uleb(2), refFunc(fs[0]), opEnd, 0xD0, valFuncref, opEnd),
		ins(byte(5), valFuncref, uleb(1), refFunc(fs[1]), opEnd),
		ins(byte(6), uleb(t1), i32c(1), opEnd, valFuncref, uleb(1), refFunc(fs[2]), opEnd),
		ins(byte(7), valFuncref, uleb(1), refFunc(fs[5]), opEnd),
	)
	call0 := m.fn(i32, i32, nil, lget(0), callIndirect(ret, t0))
	call1 := m.fn(i32, i32, nil, lget(0), callIndirect(ret, t1))
	// table.init from the passive segments 1 and 5 into table 0 at 4, 5.
	initT := m.fn(none, none, nil,
		i32c(4), i32c(0), i32c(1), misc(12, 1, t0),
		i32c(5), i32c(0), i32c(1), misc(12, 5, t0),
		misc(13, 1))
	viaRef := m.fn(none, i32, nil, refFunc(fs[4]), opDrop, refFunc(fs[5]), 0xD1)
	m.exportFn("call0", call0)
	m.exportFn("call1", call1)
	m.exportFn("init", initT)
	m.exportFn("viaRef", viaRef)
	// A global initialized with ref.func.
	m.global(valFuncref, false, refFunc(fs[3]))
	return m
}

// startAndShared: a start function that writes memory and a global, and an
// exported function also reached through call_indirect and ref.func.
func startAndShared() *tmod {
	m := newMod()
	m.memory(1)
	g := m.global(valI32, true, i32c(1))
	m.table(valFuncref, 1)
	ret := m.typ(none, i32)
	start := m.fn(none, none, nil, gget(g), i32c(41), opI32Add, gset(g), i32c(8), gget(g), opI32Store, mem(2, 0))
	m.start = int(start)
	shared := m.fn(none, i32, nil, gget(g), i32c(1), opI32Add, gset(g), gget(g))
	m.elems = append(m.elems, ins(byte(0), i32c(0), opEnd, uleb(1), uleb(shared)))
	viaTable := m.fn(none, i32, nil, i32c(0), callIndirect(ret, 0))
	// ref.func of a function declared only by its export.
	onlyExported := m.fn(none, i32, nil, i32c(77))
	viaRef := m.fn(none, i32, nil, refFunc(onlyExported), 0xD1)
	m.exportFn("shared", shared)
	m.exportFn("shared2", shared)
	m.exportFn("viaTable", viaTable)
	m.exportFn("start", start)
	m.exportFn("onlyExported", onlyExported)
	m.exportFn("viaRef", viaRef)
	m.export("g", 3, g)
	return m
}

func traps() *tmod {
	m := newMod()
	m.memory(1)
	m.table(valFuncref, 1)
	ret := m.typ(none, i32)
	div := m.fn(i32x2, i32, nil, lget(0), lget(1), opI32DivS)
	oob := m.fn(i32, i32, nil, lget(0), opI32Load, mem(2, 0))
	null := m.fn(none, i32, nil, i32c(0), callIndirect(ret, 0))
	unreach := m.fn(none, none, nil, opUnreachable)
	fillOOB := m.fn(none, none, nil, i32c(65530), i32c(1), i32c(100), misc(11, 0))
	// writes, then traps: memory must match up to the trap.
	partial := m.fn(none, none, nil, i32c(0), i32c(0x55), i32c(1000), misc(11, 0), opUnreachable)
	m.exportFn("div", div)
	m.exportFn("oob", oob)
	m.exportFn("null", null)
	m.exportFn("unreachable", unreach)
	m.exportFn("fillOOB", fillOOB)
	m.exportFn("partial", partial)
	return m
}

func named() *tmod {
	m := newMod()
	inner := m.fn(i32, i32, nil, lget(0), opI32Eqz, iff(blockEmpty), opUnreachable, opEnd, lget(0))
	outer := m.fn(i32, i32, nil, lget(0), call(inner))
	m.exportFn("outer", outer)
	m.customs = append(m.customs, nameSection("named", map[uint32]string{inner: "inner", outer: "outer"}, outer))
	m.customs = append(m.customs, ins(str("other"), "kept as is"))
	return m
}

// imports: a module with imported functions, so defined indices shift by
// more than zero, and an exported import.
func withImports() *tmod {
	m := newMod()
	imp := m.importFunc("env", "twice", i32, i32)
	f := m.fn(i32, i32, nil, lget(0), call(imp), i32c(1), opI32Add)
	m.exportFn("f", f)
	m.exportFn("twice", imp)
	return m
}

func moduleCases() []moduleCase {
	return []moduleCase{
		{"loop", loopSum, []testCall{args("sum", 0), args("sum", 10), args("sum", 1000)}},
		{"fib", fib, []testCall{args("fib", 0), args("fib", 1), args("fib", 15)}},
		{"tree", func() *tmod { return callTree(10) }, calls("tree")},
		{"br_table", brTable, []testCall{args("switch", 0), args("switch", 1), args("switch", 2), args("switch", 3), args("switch", 1000)}},
		{"multivalue", multiValue, []testCall{args("mv", 3, 4), args("mv", 0, 9)}},
		{"ifelse", ifElse, []testCall{args("abs", 5), args("abs", uint64(0xFFFFFFF6)), args("clamp", 500), args("clamp", uint64(0xFFFFFFFF)), args("clamp", 50)}},
		{"deadcode", deadCode, []testCall{args("br"), args("return"), args("unreachable"), args("if", 0), args("if", 1)}},
		{"simd", simdModule, []testCall{args("simd", 1, 2), args("simd", 0xFFFFFFFF, 7)}},
		{"bulk", bulkMemory, []testCall{
			args("init", 100, 5), args("copy", 300, 100, 5), args("fill", 400, 0xAB, 1000),
			args("init", 65530, 10), args("copy", 65535, 0, 2), args("fill", 0, 0, 65537),
			args("grow", 2), args("size"), args("fill", 65536, 1, 65536),
			args("drop"), args("init", 0, 1), args("init", 0, 0),
		}},
		{"reftypes", refTypes, []testCall{
			args("size"), args("call", 0), args("isNull", 0), args("grow", 3), args("growExtern", 2), args("size"),
			args("call", 3), args("set", 1), args("call", 1), args("fill", 0, 2), args("call", 0),
			args("copy", 3, 0, 2), args("call", 4), args("copy", 4, 0, 9), args("select", 0), args("select", 1),
			args("isNull", 99),
		}},
		{"elements", elements, []testCall{
			args("call0", 0), args("call0", 1), args("call0", 2), args("call0", 3), args("call0", 4),
			args("call1", 0), args("call1", 1), args("init"), args("call0", 4), args("call0", 5),
			args("init"), args("viaRef"),
		}},
		{"start", startAndShared, calls("shared", "shared2", "viaTable", "start", "shared", "onlyExported", "viaRef")},
		{"traps", traps, []testCall{args("div", 1, 0), args("div", 0x80000000, 0xFFFFFFFF), args("div", 7, 2), args("oob", 65533), args("oob", 4), args("null"), args("unreachable"), args("fillOOB"), args("partial")}},
		{"imports", withImports, []testCall{args("f", 20), args("twice", 4)}},
		{"named", named, []testCall{args("outer", 0), args("outer", 3)}},
	}
}

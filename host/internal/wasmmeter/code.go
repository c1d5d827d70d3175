package wasmmeter

import (
	"errors"
	"fmt"
)

// What the rewrite does at an event, a position in a function body.
const (
	evBoundary  = iota // charge point: charge the run that starts here, maybe check
	evCall             // call: renumber the callee
	evRefFunc          // ref.func: renumber the function
	evMemBulk          // memory.fill/copy/init: charge n/64+1 and check first
	evTableBulk        // table.fill/copy/init: charge n+1 and check first
	evMemGrow          // memory.grow: charge n*1024+1, check, maybe guard
	evTableGrow        // table.grow: charge n+1, check, maybe guard
)

type event struct {
	pos, end uint32 // the instruction's offsets in the body
	ord      uint32 // the instruction's ordinal in the body
	kind     uint8
	check    bool
	idx      uint32 // function or table index; for a boundary, its cost
}

// Opcodes the rewrite emits or looks for.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0B
	opCall         = 0x10
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opLocalTee     = 0x22
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opMemorySize   = 0x3F
	opI32Const     = 0x41
	opI64Const     = 0x42
	opI64LtS       = 0x53
	opI64GtU       = 0x56
	opI64Add       = 0x7C
	opI64Sub       = 0x7D
	opI64Shl       = 0x86
	opI64ShrU      = 0x88
	opI64ExtendI32 = 0xAD // i64.extend_i32_u
	opRefFunc      = 0xD2
	opPrefixMisc   = 0xFC
	miscTableSize  = 16
	blockEmpty     = 0x40
)

// bodyRewriter rewrites the function bodies of one module. Its buffers are
// reused from one body to the next.
type bodyRewriter struct {
	m          *module
	budget     uint64
	fuel       uint32 // index of the fuel global
	yield      uint32 // index of the yield import
	getFuel    []byte // global.get fuel
	setFuel    []byte // global.set fuel
	checkCode  []byte // if fuel < 0 { fuel = yield(fuel) }
	wrapped    []int32
	declare    []bool // functions a ref.func names that lose their export declaration
	numDeclare int

	events  []event
	control []byte
	body    []byte
}

func newBodyRewriter(m *module, budget uint64, fuel, yield uint32, wrapped []int32) *bodyRewriter {
	w := &bodyRewriter{m: m, budget: budget, fuel: fuel, yield: yield, wrapped: wrapped}
	w.getFuel = appendU32([]byte{opGlobalGet}, fuel)
	w.setFuel = appendU32([]byte{opGlobalSet}, fuel)
	c := append([]byte{}, w.getFuel...)
	c = append(c, opI64Const, 0, opI64LtS, opIf, blockEmpty)
	c = append(c, w.getFuel...)
	c = appendU32(append(c, opCall), yield)
	c = append(c, w.setFuel...)
	w.checkCode = append(c, opEnd)
	return w
}

func (w *bodyRewriter) remap(f uint32) uint32 {
	if f < w.m.numImportedFuncs {
		return f
	}
	return f + numMeterFuncs
}

// rewrite appends the metered version of the body of function fn (body
// including its locals, without the size prefix) to dst.
func (w *bodyRewriter) rewrite(dst []byte, fn uint32, body []byte, base int, limit int) ([]byte, error) {
	if len(body) > maxBodySize {
		return nil, fmt.Errorf("%w: body of %d bytes (at most %d)", ErrLimit, len(body), maxBodySize)
	}
	r := &reader{b: body, base: base}
	numParams := w.m.numParams[w.m.funcTypes[fn]]
	groups, err := r.count(2)
	if err != nil {
		return nil, fmt.Errorf("locals: %w", err)
	}
	groupsStart := r.off
	numLocals := uint64(numParams)
	for i := 0; i < groups; i++ {
		n, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("locals: %w", err)
		}
		t, err := r.byte()
		if err != nil {
			return nil, fmt.Errorf("locals: %w", err)
		}
		if err := checkValType(t); err != nil {
			return nil, fmt.Errorf("locals: %w", err)
		}
		numLocals += uint64(n)
		if numLocals > maxLocals {
			return nil, fmt.Errorf("%w: more than %d locals", ErrLimit, maxLocals)
		}
	}
	codeStart := r.off

	total, need, err := w.decode(r, uint32(numLocals))
	if err != nil {
		return nil, err
	}

	// A boundary's cost is the number of instructions up to the next one.
	next := total
	for i := len(w.events) - 1; i >= 0; i-- {
		if ev := &w.events[i]; ev.kind == evBoundary {
			ev.idx = next - ev.ord
			next = ev.ord
		}
	}

	// Scratch locals go after the original ones, so original indices hold.
	var scratch [3]uint32 // i32, funcref, externref
	added := 0
	b := w.body[:0]
	for i := range need {
		if need[i] {
			scratch[i] = uint32(numLocals) + uint32(added)
			added++
		}
	}
	b = appendU32(b, uint32(groups+added))
	b = append(b, body[groupsStart:codeStart]...)
	for i, t := range [3]byte{valI32, valFuncref, valExternref} {
		if need[i] {
			b = append(b, 1, t)
		}
	}

	copied := uint32(codeStart)
	for i := range w.events {
		ev := &w.events[i]
		b = append(b, body[copied:ev.pos]...)
		copied = ev.pos
		switch ev.kind {
		case evBoundary:
			b = w.charge(b, int64(ev.idx), ev.check)
		case evCall, evRefFunc:
			op := byte(opCall)
			if ev.kind == evRefFunc {
				op = opRefFunc
			}
			b = appendU32(append(b, op), w.remap(ev.idx))
			copied = ev.end
		case evMemBulk:
			b = w.chargeOperand(b, scratch[0], true, opI64ShrU, 6)
		case evTableBulk:
			b = w.chargeOperand(b, scratch[0], true, 0, 0)
		case evMemGrow:
			if w.budget == 0 {
				b = w.chargeOperand(b, scratch[0], true, opI64Shl, 10)
				break
			}
			b = w.chargeOperand(b, scratch[0], false, opI64Shl, 10)
			b = w.usedBytes(b)
			b = appendU32(append(b, opLocalGet), scratch[0])
			b = append(b, opI64ExtendI32, opI64Const, 16, opI64Shl, opI64Add)
			b = w.guard(b, nil, scratch[0], body[ev.pos:ev.end])
			copied = ev.end
		case evTableGrow:
			if w.budget == 0 {
				b = w.chargeOperand(b, scratch[0], true, 0, 0)
				break
			}
			b = w.chargeOperand(b, scratch[0], false, 0, 0)
			ref := scratch[1]
			if w.m.tables[ev.idx].ref == valExternref {
				ref = scratch[2]
			}
			b = appendU32(append(b, opLocalSet), ref)
			b = w.usedBytes(b)
			b = appendU32(append(b, opLocalGet), scratch[0])
			b = append(b, opI64ExtendI32, opI64Const, 3, opI64Shl, opI64Add)
			b = w.guard(b, appendU32([]byte{opLocalGet}, ref), scratch[0], body[ev.pos:ev.end])
			copied = ev.end
		}
		if len(dst)+len(b) > limit {
			return nil, fmt.Errorf("%w: the metered module would exceed %d bytes", ErrLimit, limit)
		}
	}
	b = append(b, body[copied:]...)
	w.body = b
	if len(dst)+len(b)+5 > limit {
		return nil, fmt.Errorf("%w: the metered module would exceed %d bytes", ErrLimit, limit)
	}
	dst = appendU32(dst, uint32(len(b)))
	return append(dst, b...), nil
}

// charge subtracts cost from the fuel counter and, with check, calls yield
// when the counter went negative.
func (w *bodyRewriter) charge(b []byte, cost int64, check bool) []byte {
	b = append(b, w.getFuel...)
	b = appendS64(append(b, opI64Const), cost)
	b = append(b, opI64Sub)
	b = append(b, w.setFuel...)
	if check {
		b = append(b, w.checkCode...)
	}
	return b
}

// chargeOperand charges for the i32 operand n on top of the stack: (n
// shifted by shift with shiftOp, if any) + 1, then checks. With keep, n stays
// on the stack (local.tee); otherwise it is only in the scratch local.
func (w *bodyRewriter) chargeOperand(b []byte, local uint32, keep bool, shiftOp byte, shift byte) []byte {
	op := byte(opLocalSet)
	if keep {
		op = opLocalTee
	}
	b = appendU32(append(b, op), local)
	b = append(b, w.getFuel...)
	b = appendU32(append(b, opLocalGet), local)
	b = append(b, opI64ExtendI32)
	if shiftOp != 0 {
		b = append(b, opI64Const, shift, shiftOp)
	}
	b = append(b, opI64Sub, opI64Const, 1, opI64Sub)
	b = append(b, w.setFuel...)
	return append(b, w.checkCode...)
}

// usedBytes pushes, as an i64, the bytes the budget counts now: linear
// memory plus every table's elements.
func (w *bodyRewriter) usedBytes(b []byte) []byte {
	first := true
	if w.m.numMemories > 0 {
		b = append(b, opMemorySize, 0, opI64ExtendI32, opI64Const, 16, opI64Shl)
		first = false
	}
	for t := range w.m.tables {
		b = appendU32(append(b, opPrefixMisc, miscTableSize), uint32(t))
		b = append(b, opI64ExtendI32, opI64Const, 3, opI64Shl)
		if !first {
			b = append(b, opI64Add)
		}
		first = false
	}
	if first {
		b = append(b, opI64Const, 0)
	}
	return b
}

// guard consumes the i64 of bytes the grow would reach and runs the grow
// only within the budget; otherwise it yields -1, the failed grow's result.
func (w *bodyRewriter) guard(b []byte, pushRef []byte, n uint32, grow []byte) []byte {
	b = appendS64(append(b, opI64Const), int64(w.budget))
	b = append(b, opI64GtU, opIf, valI32, opI32Const, 0x7F, opElse)
	b = append(b, pushRef...)
	b = appendU32(append(b, opLocalGet), n)
	b = append(b, grow...)
	return append(b, opEnd)
}

// decode walks the instructions of a body from r, checks their immediates
// and records the events of the rewrite in w.events. It returns the number
// of instructions and which scratch locals (i32, funcref, externref) the
// rewrite needs.
func (w *bodyRewriter) decode(r *reader, numLocals uint32) (uint32, [3]bool, error) {
	var need [3]bool
	m := w.m
	w.events = w.events[:0]
	control := append(w.control[:0], opBlock) // the function's own block
	defer func() { w.control = control[:0] }()
	pending, pendingCheck := true, true // function entry
	var ord uint32
	for {
		start := r.off
		if r.eof() {
			return 0, need, r.errf("body ends before the function's end")
		}
		if pending {
			w.events = append(w.events, event{pos: uint32(start), ord: ord, kind: evBoundary, check: pendingCheck})
			pending, pendingCheck = false, false
		}
		op := r.b[r.off]
		r.off++
		var err error
		ev := event{pos: uint32(start), ord: ord, kind: 0xFF}
		switch op {
		case 0x00, 0x01, 0x0F, 0x1A, 0x1B: // unreachable nop return drop select
		case opBlock, opLoop, opIf:
			err = w.blockType(r)
			if len(control) >= maxDepth {
				return 0, need, fmt.Errorf("%w: blocks nested deeper than %d", ErrLimit, maxDepth)
			}
			control = append(control, op)
			if op == opLoop {
				pending, pendingCheck = true, true
			}
		case opElse:
			if control[len(control)-1] != opIf {
				return 0, need, r.errf("else outside an if")
			}
			control[len(control)-1] = opElse
			pending = true
		case opEnd:
			control = control[:len(control)-1]
			if len(control) == 0 {
				if !r.eof() {
					return 0, need, r.errf("%d bytes after the function's end", r.remaining())
				}
				return ord + 1, need, nil
			}
			pending = true
		case 0x0C, 0x0D: // br br_if
			_, err = r.u32()
		case 0x0E: // br_table
			var n int
			if n, err = r.count(1); err == nil {
				for i := 0; i <= n && err == nil; i++ {
					_, err = r.u32()
				}
			}
		case opCall:
			ev.kind = evCall
			ev.idx, err = w.funcIndex(r)
			pending, pendingCheck = true, true
		case 0x11: // call_indirect
			if err = w.typeIndex(r); err == nil {
				_, err = w.tableIndex(r)
			}
			pending, pendingCheck = true, true
		case 0x1C: // select t*
			var n int
			if n, err = r.count(1); err == nil {
				for i := 0; i < n && err == nil; i++ {
					var t byte
					if t, err = r.byte(); err == nil {
						err = checkValType(t)
					}
				}
			}
		case opLocalGet, opLocalSet, opLocalTee:
			var x uint32
			if x, err = r.u32(); err == nil && x >= numLocals {
				err = fmt.Errorf("local %d out of range", x)
			}
		case opGlobalGet, opGlobalSet:
			var x uint32
			if x, err = r.u32(); err == nil && x >= m.numGlobals {
				err = fmt.Errorf("global %d out of range", x)
			}
		case 0x25, 0x26: // table.get table.set
			_, err = w.tableIndex(r)
		case opMemorySize, 0x40: // memory.size memory.grow
			err = w.memIndex(r)
			if op == 0x40 {
				ev.kind = evMemGrow
				need[0] = true
			}
		case opI32Const:
			_, err = r.signed(32)
		case opI64Const:
			_, err = r.signed(64)
		case 0x43:
			err = r.skip(4)
		case 0x44:
			err = r.skip(8)
		case 0xD0: // ref.null
			var t byte
			if t, err = r.byte(); err == nil {
				err = checkRefType(t)
			}
		case 0xD1: // ref.is_null
		case opRefFunc:
			ev.kind = evRefFunc
			ev.idx, err = w.funcIndex(r)
			if err == nil && ev.idx < uint32(len(w.wrapped)) && w.wrapped[ev.idx] >= 0 && !w.declare[ev.idx] {
				w.declare[ev.idx] = true
				w.numDeclare++
			}
		case opPrefixMisc:
			err = w.misc(r, &ev, &need)
		case 0xFD:
			err = w.simd(r)
		case 0x06, 0x07, 0x08, 0x09, 0x0A, 0x18, 0x19, 0x1F:
			return 0, need, unsupported("exception handling")
		case 0x12, 0x13:
			return 0, need, unsupported("tail call")
		case 0x14, 0x15, 0xD3, 0xD4, 0xD6:
			return 0, need, unsupported("typed function references")
		case 0xD5, 0xFB:
			return 0, need, unsupported("GC")
		case 0xFE:
			return 0, need, unsupported("threads")
		default:
			switch {
			case op >= 0x28 && op <= 0x3E: // loads and stores
				err = w.memarg(r)
			case op >= 0x45 && op <= 0xC4: // numeric, sign extension
			default:
				return 0, need, fmt.Errorf("offset %#x: unknown opcode %#x", r.base+start, op)
			}
		}
		if err != nil {
			return 0, need, fmt.Errorf("instruction at offset %#x (opcode %#x): %w", r.base+start, op, err)
		}
		if ev.kind != 0xFF {
			ev.end = uint32(r.off)
			w.events = append(w.events, ev)
		}
		ord++
	}
}

func (w *bodyRewriter) blockType(r *reader) error {
	if r.eof() {
		return errEOF
	}
	c := r.b[r.off]
	if c == blockEmpty {
		r.off++
		return nil
	}
	if c&0xC0 == 0x40 { // a one-byte negative number: a value type
		r.off++
		return checkValType(c)
	}
	x, err := r.signed(33)
	if err != nil {
		return err
	}
	if x < 0 || x >= int64(w.m.numTypes) {
		return fmt.Errorf("block type %d out of range", x)
	}
	return nil
}

func (w *bodyRewriter) funcIndex(r *reader) (uint32, error) {
	f, err := r.u32()
	if err == nil && f >= w.m.numFuncs() {
		err = fmt.Errorf("function %d out of range", f)
	}
	return f, err
}

func (w *bodyRewriter) typeIndex(r *reader) error {
	t, err := r.u32()
	if err == nil && t >= w.m.numTypes {
		err = fmt.Errorf("type %d out of range", t)
	}
	return err
}

func (w *bodyRewriter) tableIndex(r *reader) (uint32, error) {
	t, err := r.u32()
	if err == nil && t >= uint32(len(w.m.tables)) {
		err = fmt.Errorf("table %d out of range", t)
	}
	return t, err
}

func (w *bodyRewriter) elemIndex(r *reader) error {
	e, err := r.u32()
	if err == nil && e >= w.m.numElems {
		err = fmt.Errorf("element segment %d out of range", e)
	}
	return err
}

func (w *bodyRewriter) memIndex(r *reader) error {
	x, err := r.u32()
	if err != nil {
		return err
	}
	if x != 0 {
		return unsupported("multi-memory")
	}
	if w.m.numMemories == 0 {
		return errors.New("memory instruction in a module without memory")
	}
	return nil
}

func (w *bodyRewriter) memarg(r *reader) error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		return unsupported("multi-memory")
	}
	if w.m.numMemories == 0 {
		return errors.New("memory instruction in a module without memory")
	}
	_, err = r.u32()
	return err
}

// dataIndex reads a data segment index, which needs the data count section.
func (w *bodyRewriter) dataIndex(r *reader) error {
	d, err := r.u32()
	if err == nil && (!w.m.hasDataCount || d >= w.m.numData) {
		err = fmt.Errorf("data segment %d out of range (or no data count section)", d)
	}
	return err
}

// misc decodes the instructions after the 0xFC prefix: saturating
// conversions and the bulk memory and table operations.
func (w *bodyRewriter) misc(r *reader, ev *event, need *[3]bool) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
	case 8: // memory.init
		if err = w.dataIndex(r); err == nil {
			err = w.memIndex(r)
		}
		ev.kind = evMemBulk
	case 9: // data.drop
		err = w.dataIndex(r)
	case 10: // memory.copy
		if err = w.memIndex(r); err == nil {
			err = w.memIndex(r)
		}
		ev.kind = evMemBulk
	case 11: // memory.fill
		err = w.memIndex(r)
		ev.kind = evMemBulk
	case 12: // table.init
		if err = w.elemIndex(r); err == nil {
			_, err = w.tableIndex(r)
		}
		ev.kind = evTableBulk
	case 13: // elem.drop
		err = w.elemIndex(r)
	case 14: // table.copy
		if _, err = w.tableIndex(r); err == nil {
			_, err = w.tableIndex(r)
		}
		ev.kind = evTableBulk
	case 15: // table.grow
		ev.idx, err = w.tableIndex(r)
		ev.kind = evTableGrow
		if err == nil && w.budget != 0 {
			if w.m.tables[ev.idx].ref == valExternref {
				need[2] = true
			} else {
				need[1] = true
			}
		}
	case 16: // table.size
		_, err = w.tableIndex(r)
	case 17: // table.fill
		_, err = w.tableIndex(r)
		ev.kind = evTableBulk
	default:
		return fmt.Errorf("unknown instruction 0xfc %d", sub)
	}
	if ev.kind != 0xFF {
		need[0] = true
	}
	return err
}

// simd decodes the immediates of an instruction after the 0xFD prefix.
func (w *bodyRewriter) simd(r *reader) error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores, load32/64_zero
		return w.memarg(r)
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		return r.skip(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		return r.skip(1)
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		if err := w.memarg(r); err != nil {
			return err
		}
		return r.skip(1)
	case sub <= 0xFF:
		return nil
	case sub <= 0x113:
		return unsupported("relaxed SIMD")
	}
	return fmt.Errorf("unknown instruction 0xfd %d", sub)
}

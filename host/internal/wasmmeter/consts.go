package wasmmeter

import "fmt"

// constRewriter copies the sections made of constant expressions (globals,
// element segments), renumbering the functions they name.
type constRewriter struct {
	m     *module
	remap func(uint32) uint32
}

// expr copies one constant expression from r to b. Only the single
// instructions of Wasm 2.0 are accepted: extended constant expressions are
// a proposal the host does not enable.
func (c *constRewriter) expr(b []byte, r *reader) ([]byte, error) {
	start := r.off
	op, err := r.byte()
	if err != nil {
		return nil, err
	}
	switch op {
	case opI32Const:
		_, err = r.signed(32)
	case opI64Const:
		_, err = r.signed(64)
	case 0x43:
		err = r.skip(4)
	case 0x44:
		err = r.skip(8)
	case opGlobalGet:
		var g uint32
		if g, err = r.u32(); err == nil && g >= c.m.numGlobals {
			err = fmt.Errorf("global %d out of range", g)
		}
	case 0xD0:
		var t byte
		if t, err = r.byte(); err == nil {
			err = checkRefType(t)
		}
	case opRefFunc:
		var f uint32
		if f, err = r.u32(); err != nil {
			return nil, err
		}
		if f >= c.m.numFuncs() {
			return nil, fmt.Errorf("function %d out of range", f)
		}
		b = appendU32(append(b, opRefFunc), c.remap(f))
		start = r.off
	case 0xFD:
		var sub uint32
		if sub, err = r.u32(); err == nil {
			if sub != 12 {
				return nil, fmt.Errorf("instruction 0xfd %d in a constant expression", sub)
			}
			err = r.skip(16)
		}
	default:
		return nil, fmt.Errorf("instruction %#x in a constant expression", op)
	}
	if err != nil {
		return nil, err
	}
	end, err := r.byte()
	if err != nil {
		return nil, err
	}
	if end != opEnd {
		switch end {
		case 0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E, opGlobalGet, opI32Const, opI64Const:
			return nil, unsupported("extended constant expressions")
		}
		return nil, fmt.Errorf("constant expression not ended (opcode %#x)", end)
	}
	return append(b, r.b[start:r.off]...), nil
}

func (c *constRewriter) rewriteGlobals(s *section) ([]byte, error) {
	if s == nil {
		return appendFuelGlobal(appendU32(nil, 1)), nil
	}
	r := s.reader()
	n, err := r.count(4)
	if err != nil {
		return nil, fmt.Errorf("global section (at offset %#x): %w", s.off, err)
	}
	b := make([]byte, 0, len(s.payload)+8)
	b = appendU32(b, uint32(n+1))
	for i := 0; i < n; i++ {
		at := r.pos()
		t, _ := r.byte()
		mut, err := r.byte()
		if err == nil {
			err = checkValType(t)
		}
		if err == nil && mut > 1 {
			err = fmt.Errorf("unknown mutability %#x", mut)
		}
		if err == nil {
			b = append(b, t, mut)
			b, err = c.expr(b, r)
		}
		if err != nil {
			return nil, fmt.Errorf("global section: global at offset %#x: %w", at, err)
		}
	}
	if !r.eof() {
		return nil, fmt.Errorf("global section (at offset %#x): %d bytes after its last entry", s.off, r.remaining())
	}
	return appendFuelGlobal(b), nil
}

// appendFuelGlobal appends the fuel counter: a mutable i64 that starts at
// zero, so that code run before any export wrapper (the start function)
// yields at once.
func appendFuelGlobal(b []byte) []byte {
	return append(b, valI64, 0x01, opI64Const, 0x00, opEnd)
}

// rewriteElements copies the element segments, renumbering functions, and
// appends a declarative segment for the functions in declare: code may name
// them with ref.func only if something outside code does, and their export
// now names the wrapper.
func (c *constRewriter) rewriteElements(s *section, declare []uint32) ([]byte, error) {
	if s == nil && len(declare) == 0 {
		return nil, nil
	}
	var b []byte
	n := 0
	if s != nil {
		r := s.reader()
		var err error
		if n, err = r.count(2); err != nil {
			return nil, fmt.Errorf("element section (at offset %#x): %w", s.off, err)
		}
		b = make([]byte, 0, len(s.payload)+8+4*len(declare))
		b = appendU32(b, uint32(n+min(len(declare), 1)))
		for i := 0; i < n; i++ {
			at := r.pos()
			if b, err = c.segment(b, r); err != nil {
				return nil, fmt.Errorf("element section: segment %d (at offset %#x): %w", i, at, err)
			}
		}
		if !r.eof() {
			return nil, fmt.Errorf("element section (at offset %#x): %d bytes after its last entry", s.off, r.remaining())
		}
	} else {
		b = appendU32(b, 1)
	}
	if len(declare) > 0 {
		b = append(b, 0x03, 0x00) // declarative, function indices
		b = appendU32(b, uint32(len(declare)))
		for _, f := range declare {
			b = appendU32(b, f)
		}
	}
	return b, nil
}

func (c *constRewriter) segment(b []byte, r *reader) ([]byte, error) {
	flags, err := r.u32()
	if err != nil {
		return nil, err
	}
	if flags > 7 {
		return nil, fmt.Errorf("unknown element segment flags %#x", flags)
	}
	b = appendU32(b, flags)
	// Bit 0: passive or declarative (no offset) when set; bit 1: with bit 0,
	// declarative, without it, an explicit table index; bit 2: expressions
	// instead of function indices.
	active := flags&1 == 0
	if flags&3 == 2 {
		t, err := r.u32()
		if err != nil {
			return nil, err
		}
		if t >= uint32(len(c.m.tables)) {
			return nil, fmt.Errorf("table %d out of range", t)
		}
		b = appendU32(b, t)
	}
	if active {
		if b, err = c.expr(b, r); err != nil {
			return nil, fmt.Errorf("offset: %w", err)
		}
	}
	if flags&3 != 0 { // elemkind or reftype
		k, err := r.byte()
		if err != nil {
			return nil, err
		}
		if flags&4 == 0 && k != 0x00 {
			return nil, fmt.Errorf("unknown element kind %#x", k)
		}
		if flags&4 != 0 {
			if err := checkRefType(k); err != nil {
				return nil, err
			}
		}
		b = append(b, k)
	}
	n, err := r.count(1)
	if err != nil {
		return nil, err
	}
	b = appendU32(b, uint32(n))
	for i := 0; i < n; i++ {
		if flags&4 != 0 {
			if b, err = c.expr(b, r); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			continue
		}
		f, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		if f >= c.m.numFuncs() {
			return nil, fmt.Errorf("item %d: function %d out of range", i, f)
		}
		b = appendU32(b, c.remap(f))
	}
	return b, nil
}

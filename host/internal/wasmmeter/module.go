package wasmmeter

import (
	"bytes"
	"errors"
	"fmt"
)

// Structural limits. They bound the work and memory Instrument spends on a
// hostile module and are far above what compilers emit.
const (
	maxFunctions = 100_000
	maxBodySize  = 256 << 10
	maxLocals    = 50_000
	// A body of maxBodySize bytes can nest about 87,000 blocks; the limit is
	// below that so that it is the one a deep body meets.
	maxDepth = 50_000
	// Every guarded grow sums the sizes of all tables, so their number
	// multiplies the code added per grow.
	maxTables = 100
	// The output may be at most outputFactor×len(input)+outputSlack bytes.
	outputFactor = 4
	outputSlack  = 64 << 10
)

const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
	numSecIDs    = 14
)

// sectionRank orders the non-custom sections as the binary format requires
// (data count comes between element and code, tag between memory and global).
var sectionRank = [numSecIDs]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secTag: 6, secGlobal: 7, secExport: 8, secStart: 9, secElement: 10,
	secDataCount: 11, secCode: 12, secData: 13,
}

var sectionsByRank = []byte{
	secType, secImport, secFunction, secTable, secMemory, secTag, secGlobal,
	secExport, secStart, secElement, secDataCount, secCode, secData,
}

var sectionNames = [numSecIDs]string{
	"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count", "tag",
}

const (
	valI32       = 0x7F
	valI64       = 0x7E
	valF32       = 0x7D
	valF64       = 0x7C
	valV128      = 0x7B
	valFuncref   = 0x70
	valExternref = 0x6F
)

type section struct {
	id      byte
	payload []byte
	off     int // offset of payload in the input
}

func (s *section) reader() *reader { return &reader{b: s.payload, base: s.off} }

type importEntry struct {
	kind byte
	// start and end delimit the entry in the import section payload;
	// afterModule is where the name after the module name starts.
	start, afterModule, end int
	module, name            string
}

type export struct {
	name []byte
	kind byte
	idx  uint32
}

type tableType struct {
	ref byte
	min uint32
}

// module is what Instrument learns about the input before rewriting it.
type module struct {
	in       []byte
	sections []section
	index    [numSecIDs]int // position in sections, -1 when absent

	numTypes  uint32
	numParams []uint32 // per type
	meterType int      // index of an existing (i64)->i64 type, or -1

	imports          []importEntry
	numImportedFuncs uint32
	funcTypes        []uint32 // type index of every function, imports first
	tables           []tableType
	numMemories      int
	memMinPages      uint64
	numGlobals       uint32 // imported and defined
	exports          []export
	hasStart         bool
	start            uint32
	numElems         uint32
	hasDataCount     bool
	numData          uint32
}

func (m *module) section(id byte) *section {
	if i := m.index[id]; i >= 0 {
		return &m.sections[i]
	}
	return nil
}

func (m *module) numFuncs() uint32 { return uint32(len(m.funcTypes)) }

var wasmHeader = []byte{0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00}

// parseModule splits the input into sections and reads every section but
// code, data and custom ones.
func parseModule(in []byte) (*module, error) {
	if len(in) < len(wasmHeader) || !bytes.Equal(in[:4], wasmHeader[:4]) {
		return nil, errors.New("not a WebAssembly module (bad magic)")
	}
	if !bytes.Equal(in[4:8], wasmHeader[4:8]) {
		return nil, fmt.Errorf("unsupported binary version % x (component or pre-release binary)", in[4:8])
	}
	m := &module{in: in, meterType: -1}
	for i := range m.index {
		m.index[i] = -1
	}
	r := &reader{b: in, off: len(wasmHeader)}
	lastRank := 0
	for !r.eof() {
		at := r.pos()
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("section header at offset %#x: %w", at, err)
		}
		if int(id) >= numSecIDs {
			return nil, fmt.Errorf("section at offset %#x: unknown section id %d", at, id)
		}
		payloadOff := r.pos()
		payload, err := r.bytes(int(size))
		if err != nil {
			return nil, fmt.Errorf("%s section at offset %#x: size %d exceeds the input", sectionNames[id], at, size)
		}
		if id == secTag {
			return nil, unsupported("exception handling")
		}
		if id != secCustom {
			if sectionRank[id] <= lastRank {
				return nil, fmt.Errorf("%s section at offset %#x: out of order or repeated", sectionNames[id], at)
			}
			lastRank = sectionRank[id]
			m.index[id] = len(m.sections)
		}
		m.sections = append(m.sections, section{id: id, payload: payload, off: payloadOff})
	}
	steps := []struct {
		id    byte
		parse func(*reader) error
	}{
		{secType, m.parseTypes},
		{secImport, m.parseImports},
		{secFunction, m.parseFunctions},
		{secTable, m.parseTables},
		{secMemory, m.parseMemories},
		{secGlobal, m.parseGlobalCount},
		{secExport, m.parseExports},
		{secStart, m.parseStart},
		{secElement, m.parseElemCount},
		{secDataCount, m.parseDataCount},
	}
	for _, step := range steps {
		s := m.section(step.id)
		if s == nil {
			continue
		}
		r := s.reader()
		if err := step.parse(r); err != nil {
			return nil, fmt.Errorf("%s section (at offset %#x): %w", sectionNames[step.id], s.off, err)
		}
		// Global and element sections are only counted here; they are read in
		// full when rewritten.
		if step.id != secGlobal && step.id != secElement && !r.eof() {
			return nil, fmt.Errorf("%s section (at offset %#x): %d bytes after its last entry", sectionNames[step.id], s.off, r.remaining())
		}
	}
	if len(m.funcTypes) > maxFunctions {
		return nil, fmt.Errorf("%w: %d functions (at most %d)", ErrLimit, len(m.funcTypes), maxFunctions)
	}
	return m, nil
}

func checkValType(t byte) error {
	switch t {
	case valI32, valI64, valF32, valF64, valV128, valFuncref, valExternref:
		return nil
	case 0x64, 0x63:
		return unsupported("typed function references")
	case 0x69, 0x74:
		return unsupported("exception handling")
	case 0x6E, 0x6D, 0x6C, 0x6B, 0x6A, 0x71, 0x72, 0x73, 0x78, 0x77:
		return unsupported("GC")
	}
	return fmt.Errorf("unknown value type %#x", t)
}

func checkRefType(t byte) error {
	if t == valFuncref || t == valExternref {
		return nil
	}
	if err := checkValType(t); err != nil {
		return err
	}
	return fmt.Errorf("value type %#x is not a reference type", t)
}

func (m *module) parseTypes(r *reader) error {
	n, err := r.count(2)
	if err != nil {
		return err
	}
	m.numParams = make([]uint32, 0, n)
	for i := 0; i < n; i++ {
		start := r.off
		form, err := r.byte()
		if err != nil {
			return fmt.Errorf("type %d: %w", i, err)
		}
		switch form {
		case 0x60:
		case 0x4E, 0x4F, 0x50, 0x5E, 0x5F:
			return unsupported("GC")
		default:
			return fmt.Errorf("type %d: unknown type form %#x", i, form)
		}
		var counts [2]uint32
		for j := range counts {
			c, err := r.count(1)
			if err != nil {
				return fmt.Errorf("type %d: %w", i, err)
			}
			for k := 0; k < c; k++ {
				t, _ := r.byte()
				if err := checkValType(t); err != nil {
					return fmt.Errorf("type %d: %w", i, err)
				}
			}
			counts[j] = uint32(c)
		}
		m.numParams = append(m.numParams, counts[0])
		if m.meterType < 0 && bytes.Equal(r.b[start:r.off], meterTypeBytes) {
			m.meterType = i
		}
	}
	m.numTypes = uint32(n)
	return nil
}

// meterTypeBytes is the type of enter, yield and leave: (i64) -> i64.
var meterTypeBytes = []byte{0x60, 0x01, valI64, 0x01, valI64}

func (r *reader) limits() (min uint32, err error) {
	flag, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch flag {
	case 0x00, 0x01:
	case 0x02, 0x03:
		return 0, unsupported("threads")
	case 0x04, 0x05, 0x06, 0x07:
		return 0, unsupported("memory64")
	default:
		return 0, fmt.Errorf("unknown limits flag %#x", flag)
	}
	if min, err = r.u32(); err != nil {
		return 0, err
	}
	if flag == 0x01 {
		if _, err = r.u32(); err != nil {
			return 0, err
		}
	}
	return min, nil
}

func (m *module) tableType(r *reader) error {
	ref, err := r.byte()
	if err != nil {
		return err
	}
	if ref == 0x40 {
		return unsupported("typed function references (table initializer)")
	}
	if err := checkRefType(ref); err != nil {
		return err
	}
	min, err := r.limits()
	if err != nil {
		return err
	}
	if len(m.tables) >= maxTables {
		return fmt.Errorf("%w: more than %d tables", ErrLimit, maxTables)
	}
	m.tables = append(m.tables, tableType{ref: ref, min: min})
	return nil
}

func (m *module) memoryType(r *reader) error {
	min, err := r.limits()
	if err != nil {
		return err
	}
	m.numMemories++
	if m.numMemories > 1 {
		return unsupported("multi-memory")
	}
	m.memMinPages = uint64(min)
	return nil
}

func (m *module) parseImports(r *reader) error {
	n, err := r.count(4)
	if err != nil {
		return err
	}
	m.imports = make([]importEntry, 0, n)
	for i := 0; i < n; i++ {
		e := importEntry{start: r.off}
		if e.module, err = r.name(); err != nil {
			return fmt.Errorf("import %d: module name: %w", i, err)
		}
		e.afterModule = r.off
		if e.name, err = r.name(); err != nil {
			return fmt.Errorf("import %d: name: %w", i, err)
		}
		if e.module == ImportModule {
			return fmt.Errorf("import %d (%s.%s): the module imports from %s itself", i, e.module, e.name, ImportModule)
		}
		if e.kind, err = r.byte(); err != nil {
			return fmt.Errorf("import %d: %w", i, err)
		}
		switch e.kind {
		case 0x00:
			t, err := r.u32()
			if err != nil {
				return fmt.Errorf("import %d (%s.%s): %w", i, e.module, e.name, err)
			}
			if t >= m.numTypes {
				return fmt.Errorf("import %d (%s.%s): type %d out of range", i, e.module, e.name, t)
			}
			m.funcTypes = append(m.funcTypes, t)
			m.numImportedFuncs++
			if len(m.funcTypes) > maxFunctions {
				return fmt.Errorf("%w: more than %d functions", ErrLimit, maxFunctions)
			}
		case 0x01:
			err = m.tableType(r)
		case 0x02:
			err = m.memoryType(r)
		case 0x03:
			var t, mut byte
			if t, err = r.byte(); err == nil {
				if err = checkValType(t); err == nil {
					mut, err = r.byte()
					if err == nil && mut > 1 {
						err = fmt.Errorf("unknown global mutability %#x", mut)
					}
				}
			}
			m.numGlobals++
		case 0x04:
			return unsupported("exception handling")
		default:
			return fmt.Errorf("import %d (%s.%s): unknown import kind %#x", i, e.module, e.name, e.kind)
		}
		if err != nil {
			return fmt.Errorf("import %d (%s.%s): %w", i, e.module, e.name, err)
		}
		e.end = r.off
		m.imports = append(m.imports, e)
	}
	return nil
}

func (m *module) parseFunctions(r *reader) error {
	n, err := r.count(1)
	if err != nil {
		return err
	}
	if len(m.funcTypes)+n > maxFunctions {
		return fmt.Errorf("%w: %d functions (at most %d)", ErrLimit, len(m.funcTypes)+n, maxFunctions)
	}
	for i := 0; i < n; i++ {
		t, err := r.u32()
		if err != nil {
			return fmt.Errorf("function %d: %w", len(m.funcTypes), err)
		}
		if t >= m.numTypes {
			return fmt.Errorf("function %d: type %d out of range", len(m.funcTypes), t)
		}
		m.funcTypes = append(m.funcTypes, t)
	}
	return nil
}

func (m *module) parseTables(r *reader) error {
	n, err := r.count(3)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := m.tableType(r); err != nil {
			return fmt.Errorf("table %d: %w", len(m.tables), err)
		}
	}
	return nil
}

func (m *module) parseMemories(r *reader) error {
	n, err := r.count(2)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := m.memoryType(r); err != nil {
			return fmt.Errorf("memory %d: %w", m.numMemories, err)
		}
	}
	return nil
}

func (m *module) parseGlobalCount(r *reader) error {
	n, err := r.count(4)
	if err != nil {
		return err
	}
	m.numGlobals += uint32(n)
	return nil
}

func (m *module) parseExports(r *reader) error {
	n, err := r.count(3)
	if err != nil {
		return err
	}
	m.exports = make([]export, 0, n)
	for i := 0; i < n; i++ {
		nameLen, err := r.u32()
		if err != nil {
			return fmt.Errorf("export %d: %w", i, err)
		}
		name, err := r.bytes(int(nameLen))
		if err != nil {
			return fmt.Errorf("export %d: %w", i, err)
		}
		e := export{name: name}
		if e.kind, err = r.byte(); err != nil {
			return fmt.Errorf("export %d (%q): %w", i, name, err)
		}
		if e.idx, err = r.u32(); err != nil {
			return fmt.Errorf("export %d (%q): %w", i, name, err)
		}
		var limit uint32
		switch e.kind {
		case 0x00:
			limit = m.numFuncs()
		case 0x01:
			limit = uint32(len(m.tables))
		case 0x02:
			limit = uint32(m.numMemories)
		case 0x03:
			limit = m.numGlobals
		case 0x04:
			return unsupported("exception handling")
		default:
			return fmt.Errorf("export %d (%q): unknown export kind %#x", i, name, e.kind)
		}
		if e.idx >= limit {
			return fmt.Errorf("export %d (%q): index %d out of range", i, name, e.idx)
		}
		m.exports = append(m.exports, e)
	}
	return nil
}

func (m *module) parseStart(r *reader) error {
	f, err := r.u32()
	if err != nil {
		return err
	}
	if f >= m.numFuncs() {
		return fmt.Errorf("start function %d out of range", f)
	}
	m.hasStart, m.start = true, f
	return nil
}

func (m *module) parseElemCount(r *reader) error {
	n, err := r.count(2)
	if err != nil {
		return err
	}
	m.numElems = uint32(n)
	return nil
}

func (m *module) parseDataCount(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	m.hasDataCount, m.numData = true, n
	return nil
}

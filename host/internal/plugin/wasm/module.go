package wasm

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// readModule reads a module file of at most max bytes. The size is
// checked on the open file before it is read, and the read itself is
// bounded, so neither a huge file nor a device or FIFO that never ends
// (/dev/zero) can make the host allocate more than max.
func readModule(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("module is %d bytes, over max_module_bytes %d", st.Size(), max)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("read: %w (did the file change?)", err)
	}
	if n, _ := f.Read(make([]byte, 1)); n > 0 {
		return nil, errors.New("the file grew while it was read")
	}
	return b, nil
}

// Structural limits a module must meet before it is compiled. wazero's
// decoder allocates for what a module declares (a function declaring
// 4 294 967 295 locals is a 4 GiB allocation from six bytes of module),
// and its compiler cannot be stopped inside one function, so these are
// checked by reading the sections, not left to compilation. The values
// are the implementation limits of the WebAssembly JS API
// (https://webassembly.github.io/spec/js-api/#limits) except where noted:
// every browser engine refuses a module past them, so no portable guest
// needs more.
const (
	maxTypes           = 1_000_000
	maxImports         = 100_000
	maxExports         = 100_000
	maxGlobals         = 1_000_000
	maxDataSegments    = 100_000
	maxElementSegments = 10_000_000
	maxTables          = 100_000
	maxTableElements   = 10_000_000 // per table, initial size
	maxLocals          = 50_000     // per function, declared
	// maxFunctions is a tenth of the JS API's. A 4 MB module of a million
	// empty functions had wazero allocate 220 MB in its first 2 s of
	// compiling (100 000 take 1.4 s and 24 MB); our Go guests have
	// 1 600–3 400 functions, Extism's test modules at most 4 600.
	maxFunctions = 100_000
	// maxFunctionBytes is the largest function body. wazero's compile
	// time grows with the square of a function's blocks, and one function
	// cannot be interrupted: 10 000 empty blocks (30 KB) take 2 s, 30 000
	// take 12 s and 70 MB, so 256 KiB (85 000 blocks) bounds one function
	// to about a minute and a half and 200 MB. The largest function of our
	// Go guests is 50 KB, of Extism's test modules (Haskell) 80 KB.
	maxFunctionBytes = 256 << 10
)

// checkModuleShape refuses a module whose sections declare more than the
// limits above, reading only section headers, vector counts, and each
// function's size and local declarations.
func checkModuleShape(wasm []byte) error {
	r := wasmReader{b: wasm, off: 8}
	imported := 0
	for !r.done() {
		id, body, err := r.section()
		if err != nil {
			return err
		}
		s := wasmReader{b: body}
		var n uint32
		if id != 0 && id != 8 && id != 12 { // custom, start, data count: no vector
			if n, err = s.u32(); err != nil {
				return fmt.Errorf("section %d: %w", id, err)
			}
		}
		count := func(what string, max int) error {
			if int(n) > max {
				return fmt.Errorf("%d %s, over the limit of %d", n, what, max)
			}
			return nil
		}
		switch id {
		case 1:
			err = count("types", maxTypes)
		case 2:
			if err = count("imports", maxImports); err == nil {
				imported, err = importedFunctions(&s, n)
			}
		case 3:
			if int(n)+imported > maxFunctions {
				err = fmt.Errorf("%d functions (%d imported), over the limit of %d", int(n)+imported, imported, maxFunctions)
			}
		case 4:
			if err = count("tables", maxTables); err == nil {
				err = checkTables(&s, n)
			}
		case 6:
			err = count("globals", maxGlobals)
		case 7:
			err = count("exports", maxExports)
		case 9:
			err = count("element segments", maxElementSegments)
		case 10:
			err = checkCode(&s, n)
		case 11:
			err = count("data segments", maxDataSegments)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// importedFunctions counts the function imports of an import section.
func importedFunctions(r *wasmReader, n uint32) (int, error) {
	funcs := 0
	for i := uint32(0); i < n; i++ {
		for range 2 { // module and field name
			l, err := r.u32()
			if err != nil {
				return 0, fmt.Errorf("import %d: %w", i, err)
			}
			if _, err := r.bytes(int(l)); err != nil {
				return 0, fmt.Errorf("import %d: %w", i, err)
			}
		}
		kind, err := r.byte()
		if err != nil {
			return 0, fmt.Errorf("import %d: %w", i, err)
		}
		switch kind {
		case 0: // function: type index
			funcs++
			_, err = r.u32()
		case 1: // table
			_, err = tableType(r)
		case 2: // memory: limits (wazero checks them against memory_pages)
			_, _, err = limitsType(r)
		case 3: // global: value type, mutability
			if err = valType(r); err == nil {
				_, err = r.byte()
			}
		case 4: // tag: attribute, type index
			if _, err = r.byte(); err == nil {
				_, err = r.u32()
			}
		default:
			err = fmt.Errorf("unknown import kind %d", kind)
		}
		if err != nil {
			return 0, fmt.Errorf("import %d: %w", i, err)
		}
	}
	return funcs, nil
}

func checkTables(r *wasmReader, n uint32) error {
	for i := uint32(0); i < n; i++ {
		min, err := tableType(r)
		if err != nil {
			return fmt.Errorf("table %d: %w", i, err)
		}
		if min > maxTableElements {
			return fmt.Errorf("table %d declares %d elements, over the limit of %d", i, min, maxTableElements)
		}
	}
	return nil
}

// checkCode checks each function body's size and declared locals.
func checkCode(r *wasmReader, n uint32) error {
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return fmt.Errorf("function body %d: %w", i, err)
		}
		if size > maxFunctionBytes {
			return fmt.Errorf("function body %d is %d bytes, over the limit of %d", i, size, maxFunctionBytes)
		}
		body, err := r.bytes(int(size))
		if err != nil {
			return fmt.Errorf("function body %d: %w", i, err)
		}
		b := wasmReader{b: body}
		decls, err := b.u32()
		if err != nil {
			return fmt.Errorf("function body %d: %w", i, err)
		}
		locals := uint64(0)
		for j := uint32(0); j < decls; j++ {
			c, err := b.u32()
			if err != nil {
				return fmt.Errorf("function body %d: %w", i, err)
			}
			if locals += uint64(c); locals > maxLocals {
				return fmt.Errorf("function body %d declares more than %d locals", i, maxLocals)
			}
			if err := valType(&b); err != nil {
				return fmt.Errorf("function body %d: %w", i, err)
			}
		}
	}
	return nil
}

// tableType reads a table type and returns its initial size.
func tableType(r *wasmReader) (uint32, error) {
	if err := valType(r); err != nil { // the element reference type
		return 0, err
	}
	min, _, err := limitsType(r)
	return min, err
}

// limitsType reads limits: a flag, the minimum, and the maximum when the
// flag has bit 0 (bit 1 marks shared memory). 64-bit limits are refused:
// wazero does not implement memory64.
func limitsType(r *wasmReader) (min uint32, hasMax bool, err error) {
	flag, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	if flag > 3 {
		return 0, false, fmt.Errorf("unsupported limits flag %#x", flag)
	}
	if min, err = r.u32(); err != nil {
		return 0, false, err
	}
	if flag&1 != 0 {
		if _, err = r.u32(); err != nil {
			return 0, false, err
		}
	}
	return min, flag&1 != 0, nil
}

// valType skips a value type: one byte, or a reference type prefix (0x63
// nullable, 0x64 non-null) and its heap type, a signed LEB128.
func valType(r *wasmReader) error {
	t, err := r.byte()
	if err != nil {
		return err
	}
	if t != 0x63 && t != 0x64 {
		return nil
	}
	for range 5 {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errors.New("heap type LEB128 too long")
}

package wasm

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// moduleExports lists the names a core Wasm module exports, read straight
// from its export section. Reading them without wazero lets the host refuse
// a module with a foreign ABI marker or a missing export before paying for
// its compilation (seconds for a Go guest) or running any of its code.
func moduleExports(wasm []byte) (map[string]bool, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly module (bad magic)")
	}
	if v := wasm[4:8]; v[0] != 1 || v[1] != 0 || v[2] != 0 || v[3] != 0 {
		return nil, fmt.Errorf("unsupported WebAssembly binary version %x (want a core module, version 1)", v)
	}
	r := wasmReader{b: wasm, off: 8}
	for !r.done() {
		id, body, err := r.section()
		if err != nil {
			return nil, err
		}
		if id == 7 {
			return parseExportSection(body)
		}
	}
	return map[string]bool{}, nil
}

func parseExportSection(body []byte) (map[string]bool, error) {
	r := wasmReader{b: body}
	n, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("export section: %w", err)
	}
	names := make(map[string]bool, min(int(n), 1024))
	for i := uint32(0); i < n; i++ {
		l, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("export %d: %w", i, err)
		}
		name, err := r.bytes(int(l))
		if err != nil {
			return nil, fmt.Errorf("export %d: %w", i, err)
		}
		if _, err := r.byte(); err != nil { // kind: func, table, memory, global, tag
			return nil, fmt.Errorf("export %q: %w", name, err)
		}
		if _, err := r.u32(); err != nil { // index
			return nil, fmt.Errorf("export %q: %w", name, err)
		}
		names[string(name)] = true
	}
	return names, nil
}

// markerMajors returns the ABI majors whose marker (anvil_abi_vN) the
// module exports, highest first, so "speaks v2" can be told apart from
// "speaks nothing".
func markerMajors(exports map[string]bool) []int {
	var majors []int
	for name := range exports {
		if n, ok := strings.CutPrefix(name, abi.MarkerPrefix); ok {
			if v, err := strconv.Atoi(n); err == nil && v > 0 {
				majors = append(majors, v)
			}
		}
	}
	slices.Sort(majors)
	slices.Reverse(majors)
	return majors
}

var errTruncated = errors.New("truncated WebAssembly binary")

type wasmReader struct {
	b   []byte
	off int
}

func (r *wasmReader) done() bool { return r.off >= len(r.b) }

// section reads one section of a module: its id and its body.
func (r *wasmReader) section() (byte, []byte, error) {
	id, err := r.byte()
	if err != nil {
		return 0, nil, err
	}
	size, err := r.u32()
	if err != nil {
		return 0, nil, fmt.Errorf("section %d: %w", id, err)
	}
	body, err := r.bytes(int(size))
	if err != nil {
		return 0, nil, fmt.Errorf("section %d: %w", id, err)
	}
	return id, body, nil
}

func (r *wasmReader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *wasmReader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, errTruncated
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s, nil
}

// u32 reads an unsigned LEB128 value of at most 5 bytes.
func (r *wasmReader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift == 28 && c > 0x0f {
			return 0, errors.New("LEB128 value overflows u32")
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("LEB128 value overflows u32")
}

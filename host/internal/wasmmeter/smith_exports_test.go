package wasmmeter

import (
	"errors"
	"fmt"
)

// wasmExport is one entry of a module's export section. The generated-module
// test needs the exports in section order and with their kinds: wazero's
// CompiledModule lists exported functions and memories in maps (no order)
// and does not list exported globals at all.
type wasmExport struct {
	name  string
	kind  byte // 0 function, 1 table, 2 memory, 3 global
	index uint32
}

const (
	exportFunc   = 0
	exportMemory = 2
	exportGlobal = 3
)

// readExports returns the export section of a binary module, or nothing
// when it has none. It reads only the section framing and the export
// section; wazero has validated the module before this is called.
func readExports(wasm []byte) ([]wasmExport, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("reading exports: not a binary module")
	}
	r := byteReader{b: wasm, off: 8}
	for r.off < len(r.b) {
		id := r.byte()
		size := r.u32()
		if r.err != nil {
			return nil, fmt.Errorf("reading exports: section header at %d: %w", r.off, r.err)
		}
		end := r.off + int(size)
		if end > len(r.b) || end < r.off {
			return nil, fmt.Errorf("reading exports: section %d runs past the end", id)
		}
		if id != 7 {
			r.off = end
			continue
		}
		n := r.u32()
		exports := make([]wasmExport, 0, min(n, 1<<16))
		for i := uint32(0); i < n && r.err == nil; i++ {
			name := r.name()
			kind := r.byte()
			index := r.u32()
			exports = append(exports, wasmExport{name: name, kind: kind, index: index})
		}
		if r.err != nil {
			return nil, fmt.Errorf("reading exports: export section: %w", r.err)
		}
		return exports, nil
	}
	return nil, nil
}

type byteReader struct {
	b   []byte
	off int
	err error
}

var errShort = errors.New("unexpected end")

func (r *byteReader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.err = errShort
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *byteReader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = errors.New("LEB128 longer than 5 bytes")
	return 0
}

func (r *byteReader) name() string {
	n := int(r.u32())
	if r.err != nil || n > len(r.b)-r.off {
		r.err = errShort
		return ""
	}
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}

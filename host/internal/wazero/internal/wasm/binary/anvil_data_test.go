package binary

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/agentanvil/anvil/host/internal/wazero/api"
	"github.com/agentanvil/anvil/host/internal/wazero/internal/wasm"
)

// Anvil patch test (PATCHES.md, "Lean compiled module"): the data
// section's segments take their bytes from one allocation, each capped at
// its own end.
func TestDataSectionSegmentsShareOneArena(t *testing.T) {
	section := []byte{3,
		0, 0x41, 1, 0x0b, 2, 0xa, 0xb, // at 1: a b
		0, 0x41, 16, 0x0b, 0, // at 16: nothing
		0, 0x41, 32, 0x0b, 3, 0xd, 0xe, 0xf, // at 32: d e f
	}
	segs, err := decodeDataSection(bytes.NewReader(section), api.CoreFeaturesV2, uint32(len(section)))
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 3 || !bytes.Equal(segs[0].Init, []byte{0xa, 0xb}) || len(segs[1].Init) != 0 || !bytes.Equal(segs[2].Init, []byte{0xd, 0xe, 0xf}) {
		t.Fatalf("decoded %+v", segs)
	}
	for i, s := range segs {
		if cap(s.Init) != len(s.Init) {
			t.Errorf("segment %d: capacity %d beyond its %d bytes", i, cap(s.Init), len(s.Init))
		}
	}
	if unsafe.Add(unsafe.Pointer(&segs[0].Init[0]), 2) != unsafe.Pointer(&segs[2].Init[0]) {
		t.Error("segments 0 and 2 are not neighbours in one allocation")
	}
	// A section that claims more than the binary holds fails as before.
	if _, err := decodeDataSection(bytes.NewReader(section[:len(section)-1]), api.CoreFeaturesV2, uint32(len(section))); err == nil {
		t.Error("a truncated section decoded")
	}
}

// Anvil patch test (PATCHES.md, "Lean compiled module"): for a compile,
// function bodies are slices of the binary, capped at their ends; a plain
// decode still copies them.
func TestDecodeModuleForCompileSlicesBodies(t *testing.T) {
	bin := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		1, 4, 1, 0x60, 0, 0, // type () -> ()
		3, 3, 2, 0, 0, // two functions of type 0
		10, 9, 2, 2, 0, 0x0b, 4, 1, 1, 0x7f, 0x0b, // bodies: end; one i32 local, end
	}
	for _, tc := range []struct {
		name   string
		decode func([]byte, api.CoreFeatures, uint32, bool, bool, bool) (*wasm.Module, error)
		alias  bool
	}{
		{"DecodeModule", DecodeModule, false},
		{"DecodeModuleForCompile", DecodeModuleForCompile, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.decode(bin, api.CoreFeaturesV2, 1, false, false, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.CodeSection) != 2 || !bytes.Equal(m.CodeSection[0].Body, []byte{0x0b}) || !bytes.Equal(m.CodeSection[1].Body, []byte{0x0b}) ||
				len(m.CodeSection[1].LocalTypes) != 1 {
				t.Fatalf("decoded %+v", m.CodeSection)
			}
			at := []int{len(bin) - 6, len(bin) - 1} // where each body's end opcode is
			for i, c := range m.CodeSection {
				aliases := unsafe.Pointer(&c.Body[0]) == unsafe.Pointer(&bin[at[i]])
				if aliases != tc.alias {
					t.Errorf("body %d is a slice of the binary: %v, want %v", i, aliases, tc.alias)
				}
				if cap(c.Body) != len(c.Body) {
					t.Errorf("body %d: capacity %d beyond its %d bytes", i, cap(c.Body), len(c.Body))
				}
			}
		})
	}
}

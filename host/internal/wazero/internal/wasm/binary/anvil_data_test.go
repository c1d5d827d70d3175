package binary

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/agentanvil/anvil/host/internal/wazero/api"
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

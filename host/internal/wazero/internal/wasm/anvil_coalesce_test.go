package wasm

import (
	"bytes"
	"testing"
)

// Anvil patch tests (PATCHES.md, "Lean compiled module"):
// CoalesceDataSegments joins segments only where no instantiation can
// tell, and the memory an instance starts with is the same byte for byte.

func i32Seg(off int32, init ...byte) DataSegment {
	return DataSegment{OffsetExpression: NewConstantExpressionFromI32(off), Init: init}
}

// memoryImage is what applyData writes into a fresh memory of size bytes,
// or nil when instantiation fails.
func memoryImage(t *testing.T, segs []DataSegment, size int) []byte {
	t.Helper()
	mi := &ModuleInstance{MemoryInstance: &MemoryInstance{Buffer: make([]byte, size)}}
	if err := mi.applyData(segs, false); err != nil {
		return nil
	}
	return mi.MemoryInstance.Buffer
}

func TestCoalesceDataSegments(t *testing.T) {
	dataCount := uint32(2)
	gap := make([]byte, DataSegmentMaxGap)
	for _, tc := range []struct {
		name   string
		module *Module
		want   []DataSegment // nil: unchanged
	}{
		{
			name:   "neighbours with gaps join",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(1, 0xa, 0xb), i32Seg(5, 0xc), i32Seg(6, 0xd)}},
			want:   []DataSegment{i32Seg(1, 0xa, 0xb, 0, 0, 0xc, 0xd)},
		},
		{
			name:   "the widest gap joins",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(0, 1), i32Seg(1+DataSegmentMaxGap, 2)}},
			want:   []DataSegment{i32Seg(0, append(append([]byte{1}, gap...), 2)...)},
		},
		{
			name:   "a wider gap does not",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(0, 1), i32Seg(2+DataSegmentMaxGap, 2)}},
		},
		{
			name:   "a data count section: memory.init and data.drop may name segments",
			module: &Module{MemorySection: &Memory{Min: 1}, DataCountSection: &dataCount, DataSection: []DataSegment{i32Seg(0, 1), i32Seg(1, 2)}},
		},
		{
			name:   "an imported memory may hold bytes in the gaps",
			module: &Module{ImportMemoryCount: 1, DataSection: []DataSegment{i32Seg(0, 1), i32Seg(2, 2)}},
		},
		{
			name:   "overlapping segments: the later write wins",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(0, 1, 2), i32Seg(1, 3)}},
		},
		{
			name: "a passive segment",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(0, 1),
				{Passive: true, Init: []byte{2}}}},
		},
		{
			name: "an offset from a global",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(0, 1),
				{OffsetExpression: ConstantExpression{Data: []byte{OpcodeGlobalGet, 0, OpcodeEnd}}, Init: []byte{2}}}},
		},
		{
			name:   "a segment written earlier inside the gap keeps its bytes",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(3, 9), i32Seg(0, 1), i32Seg(6, 2)}},
		},
		{
			name:   "runs out of address order",
			module: &Module{MemorySection: &Memory{Min: 1}, DataSection: []DataSegment{i32Seg(100, 7), i32Seg(0, 1), i32Seg(3, 2), i32Seg(200, 8), i32Seg(202, 9)}},
			want:   []DataSegment{i32Seg(100, 7), i32Seg(0, 1, 0, 0, 2), i32Seg(200, 8, 0, 9)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]DataSegment(nil), tc.module.DataSection...)
			tc.module.CoalesceDataSegments()
			want := tc.want
			if want == nil {
				want = before
			}
			got := tc.module.DataSection
			if len(got) != len(want) {
				t.Fatalf("%d segments, want %d: %+v", len(got), len(want), got)
			}
			for i := range want {
				if !bytes.Equal(got[i].OffsetExpression.Data, want[i].OffsetExpression.Data) || !bytes.Equal(got[i].Init, want[i].Init) || got[i].Passive != want[i].Passive {
					t.Errorf("segment %d = %+v, want %+v", i, got[i], want[i])
				}
				if len(got[i].Init) != cap(got[i].Init) {
					t.Errorf("segment %d: capacity %d beyond its %d bytes", i, cap(got[i].Init), len(got[i].Init))
				}
			}
		})
	}
}

// FuzzCoalesceDataSegments: for any set of active i32.const segments, a
// fresh memory holds the same bytes after instantiation (or instantiation
// fails alike) with the segments as decoded and as coalesced.
func FuzzCoalesceDataSegments(f *testing.F) {
	f.Add([]byte{1, 2, 0xa, 5, 1, 0xb, 6, 1, 0xc}, uint16(64))
	f.Add([]byte{3, 1, 9, 0, 1, 1, 6, 1, 2}, uint16(64))
	f.Add([]byte{0, 2, 1, 2, 1, 3}, uint16(64))
	f.Add([]byte{200, 1, 7, 0, 1, 1, 3, 1, 2, 250, 1, 8}, uint16(60))
	f.Add([]byte{0, 1, 1, 66, 1, 2}, uint16(128))
	f.Fuzz(func(t *testing.T, spec []byte, size uint16) {
		// spec is a list of (offset, length, bytes...) triples.
		var segs []DataSegment
		for len(spec) >= 2 && len(segs) < 64 {
			off, n := spec[0], int(spec[1]%16)
			spec = spec[2:]
			init := make([]byte, n)
			copy(init, spec)
			spec = spec[min(n, len(spec)):]
			segs = append(segs, i32Seg(int32(off)+int32(n%3)*64, init...))
		}
		m := Module{MemorySection: &Memory{Min: 1}, DataSection: append([]DataSegment(nil), segs...)}
		m.CoalesceDataSegments()
		want, got := memoryImage(t, segs, int(size%512)), memoryImage(t, m.DataSection, int(size%512))
		if (want == nil) != (got == nil) || !bytes.Equal(want, got) {
			t.Fatalf("memory differs after coalescing %d segments into %d:\nwant %x\ngot  %x", len(segs), len(m.DataSection), want, got)
		}
	})
}

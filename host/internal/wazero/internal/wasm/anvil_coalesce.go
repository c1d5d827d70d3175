package wasm

import (
	"slices"

	"github.com/agentanvil/anvil/host/internal/wazero/internal/leb128"
)

// DataSegmentMaxGap is the widest run of zero bytes CoalesceDataSegments
// writes to join two segments. Go's linker ends a data segment at every
// run of eight or more zero bytes; most of its gaps are 18–32 bytes, which
// cost less as bytes than as a segment (a 56-byte DataSegment and the
// allocator's rounding of its Init).
const DataSegmentMaxGap = 64

// CoalesceDataSegments joins active data segments that follow one another
// in the data section and in memory, gaps of at most DataSegmentMaxGap
// zero bytes included, when nothing can tell the difference:
//
//   - no data count section: without one, validation refuses memory.init
//     and data.drop, the only instructions that name a segment;
//   - the module defines its memory rather than importing it: a fresh
//     memory is all zeros, so writing zeros in a gap changes nothing, and
//     a failed instantiation discards the memory, so when a segment does
//     not fit no earlier segment's write can be seen;
//   - every segment is active with an i32.const offset, and no two
//     segments overlap: a joined gap holds no other segment's bytes, so no
//     write is overwritten.
//
// It runs after validation. A Go module has tens of thousands of segments;
// textcheck's 48,093 become 18, and 4.3 MiB of decoded segments 2.0 MiB.
func (m *Module) CoalesceDataSegments() {
	n := len(m.DataSection)
	if n < 2 || m.DataCountSection != nil || m.ImportMemoryCount != 0 || m.MemorySection == nil {
		return
	}
	type span struct {
		start, end uint64
		index      int
	}
	spans := make([]span, n)
	for i := range m.DataSection {
		d := &m.DataSection[i]
		off, ok := i32ConstOffset(d)
		if !ok {
			return
		}
		spans[i] = span{start: off, end: off + uint64(len(d.Init)), index: i}
	}
	byStart := slices.Clone(spans)
	slices.SortStableFunc(byStart, func(a, b span) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	rank := make([]int, n)
	for r, s := range byStart {
		if r > 0 && s.start < byStart[r-1].end {
			return // overlapping segments: order matters, keep them
		}
		rank[s.index] = r
	}
	joins := func(i int) bool { // segment i+1 continues segment i's run
		return rank[i+1] == rank[i]+1 && spans[i+1].start-spans[i].end <= DataSegmentMaxGap
	}
	runs, size := 1, uint64(0)
	for i := 0; i < n-1; i++ {
		if joins(i) {
			size += spans[i+1].start - spans[i].end
		} else {
			runs++
		}
		size += uint64(len(m.DataSection[i].Init))
	}
	size += uint64(len(m.DataSection[n-1].Init))
	if runs == n {
		return
	}
	arena := make([]byte, size)
	out := make([]DataSegment, 0, runs)
	for first := 0; first < n; {
		last := first
		for last < n-1 && joins(last) {
			last++
		}
		start, end := spans[first].start, spans[last].end
		init := arena[: end-start : end-start]
		arena = arena[end-start:]
		for i := first; i <= last; i++ {
			copy(init[spans[i].start-start:], m.DataSection[i].Init)
		}
		out = append(out, DataSegment{OffsetExpression: m.DataSection[first].OffsetExpression, Init: init})
		first = last + 1
	}
	m.DataSection = out
}

// i32ConstOffset is an active segment's offset when its expression is a
// lone i32.const, read as the instantiation reads it (unsigned).
func i32ConstOffset(d *DataSegment) (uint64, bool) {
	e := d.OffsetExpression.Data
	if d.Passive || len(e) < 3 || e[0] != OpcodeI32Const {
		return 0, false
	}
	v, n, err := leb128.LoadInt32(e[1:])
	if err != nil || int(1+n) != len(e)-1 || e[len(e)-1] != OpcodeEnd {
		return 0, false
	}
	return uint64(uint32(v)), true
}

package wasmmeter

import (
	"cmp"
	"slices"
)

// Joining data segments. Go's linker ends a data segment at every run of
// eight zero bytes, so a Go guest has tens of thousands of them, and
// wazero keeps each as an allocation of its own for as long as the
// compiled module lives (and a slice header per segment in every
// instance). The rewrite joins active segments that follow each other in
// the section and in memory, writing out the zeros between them, when
// nothing can tell the difference:
//
//   - no data count section, so no memory.init or data.drop names a
//     segment by its index (they are invalid without one);
//   - the memory is the module's own, so it starts all zeros (an imported
//     one could hold anything in the gap);
//   - every active segment's offset is a lone i32.const, and no two active
//     segments overlap, so a gap written with zeros holds no other
//     segment's bytes and the order segments are written in does not
//     matter;
//   - the gap is at most maxDataGap bytes and the two are neighbours in
//     memory, not only in the section.
//
// Anything else leaves the section as it is. Passive segments, which
// nothing can name without a data count section, are kept as they are.

// maxDataGap bounds the zeros written out to join two segments.
const maxDataGap = 64

type dataSegment struct {
	active bool
	offset uint32 // active only
	raw    []byte // the whole entry, for segments written as they are
	bytes  []byte // active only: the segment's bytes
}

// joinData returns the data section's payload with neighbouring active
// segments joined, or nil when it must stay as it is.
func (m *module) joinData() []byte {
	s := m.section(secData)
	if s == nil || m.hasDataCount || m.importsMemory() {
		return nil
	}
	r := s.reader()
	n, err := r.count(1)
	if err != nil {
		return nil
	}
	segs := make([]dataSegment, 0, n)
	for i := 0; i < n; i++ {
		start := r.off
		flags, err := r.u32()
		if err != nil {
			return nil
		}
		var seg dataSegment
		switch flags {
		case 0:
			op, err := r.byte()
			if err != nil || op != opI32Const {
				return nil
			}
			off, err := r.signed(32)
			if err != nil {
				return nil
			}
			if end, err := r.byte(); err != nil || end != opEnd {
				return nil
			}
			seg.active, seg.offset = true, uint32(off)
		case 1: // passive
		default: // an explicit memory index, or malformed: leave it all alone
			return nil
		}
		size, err := r.u32()
		if err != nil {
			return nil
		}
		b, err := r.bytes(int(size))
		if err != nil {
			return nil
		}
		seg.bytes, seg.raw = b, s.payload[start:r.off]
		segs = append(segs, seg)
	}
	if r.off != len(s.payload) {
		return nil
	}

	// Neighbours in memory: each active segment's successor by offset, and
	// no overlap anywhere.
	order := make([]int, 0, len(segs))
	for i, sg := range segs {
		if sg.active {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(segs[a].offset, segs[b].offset) })
	next := make([]int, len(segs))
	for i := range next {
		next[i] = -1
	}
	for k := 1; k < len(order); k++ {
		prev, cur := segs[order[k-1]], segs[order[k]]
		if uint64(prev.offset)+uint64(len(prev.bytes)) > uint64(cur.offset) {
			return nil // overlapping segments: the order they are written in matters
		}
		next[order[k-1]] = order[k]
	}

	out := appendU32(nil, 0) // the count, patched below
	count := uint32(0)
	joined := false
	for i := 0; i < len(segs); {
		sg := segs[i]
		if !sg.active || len(sg.bytes) == 0 {
			out = append(out, sg.raw...)
			count++
			i++
			continue
		}
		// Extend the run while the following segment in the section is
		// also the following one in memory, close by and not empty.
		j := i
		end := uint64(sg.offset) + uint64(len(sg.bytes))
		for j+1 < len(segs) && next[j] == j+1 && len(segs[j+1].bytes) > 0 &&
			uint64(segs[j+1].offset)-end <= maxDataGap {
			j++
			end = uint64(segs[j].offset) + uint64(len(segs[j].bytes))
		}
		if j == i {
			out = append(out, sg.raw...)
			count++
			i++
			continue
		}
		joined = true
		out = appendU32(out, 0)
		out = append(out, opI32Const)
		out = appendS64(out, int64(int32(sg.offset)))
		out = append(out, opEnd)
		out = appendU32(out, uint32(end-uint64(sg.offset)))
		at := uint64(sg.offset)
		for k := i; k <= j; k++ {
			for ; at < uint64(segs[k].offset); at++ {
				out = append(out, 0)
			}
			out = append(out, segs[k].bytes...)
			at += uint64(len(segs[k].bytes))
		}
		count++
		i = j + 1
		if len(out) > 2*len(s.payload)+maxDataGap {
			return nil // gaps of zeros outweigh what joining saves
		}
	}
	if !joined {
		return nil
	}
	return append(appendU32(nil, count), out[1:]...)
}

// importsMemory reports whether the module imports its memory.
func (m *module) importsMemory() bool {
	for _, im := range m.imports {
		if im.kind == 0x02 {
			return true
		}
	}
	return false
}

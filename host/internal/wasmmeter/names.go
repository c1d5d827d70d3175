package wasmmeter

// rewriteNames renumbers the functions of the "name" custom section; head
// is the payload up to and including the section's own name and r reads the
// rest. The subsections indexed by function (function and local names) are
// renumbered; label names are dropped, since the rewrite adds blocks that
// shift label numbering; the others (module, type, table, memory, global,
// element and data names) name spaces the rewrite only appends to and stay
// as they are. A name section this code cannot read is dropped: it carries
// no meaning a runtime needs, and keeping it unchanged would misname every
// function. Export wrappers are named after their callee with a "$meter"
// suffix, so that stack traces read. It returns nil when the section is
// dropped.
func (m *module) rewriteNames(head []byte, r *reader, numFuncs uint32, wrapped []int32, numWrappers int) []byte {
	b := make([]byte, 0, len(r.b)+16)
	b = append(b, head...)
	remap := func(f uint32) uint32 {
		if f < m.numImportedFuncs {
			return f
		}
		return f + numMeterFuncs
	}
	var sub, entries []byte
	for !r.eof() {
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return nil
		}
		payload, err := r.bytes(int(size))
		if err != nil {
			return nil
		}
		switch id {
		case 1, 2: // function names, local names
			sr := &reader{b: payload}
			n, err := sr.count(2)
			if err != nil {
				return nil
			}
			entries = entries[:0]
			var wrapperNames []string
			if id == 1 {
				wrapperNames = make([]string, numWrappers)
			}
			count := n
			for i := 0; i < n; i++ {
				f, err := sr.u32()
				if err != nil || f >= numFuncs {
					return nil
				}
				from := sr.off
				if id == 1 {
					name, err := sr.name()
					if err != nil {
						return nil
					}
					if k := wrapped[f]; k >= 0 {
						wrapperNames[k] = name
					}
				} else if !skipNameMap(sr) {
					return nil
				}
				entries = appendU32(entries, remap(f))
				entries = append(entries, payload[from:sr.off]...)
			}
			if !sr.eof() {
				return nil
			}
			// Wrappers come last in the index space, so appending keeps the
			// map sorted.
			for k, name := range wrapperNames {
				if name != "" {
					entries = appendU32(entries, numFuncs+numMeterFuncs+uint32(k))
					entries = appendName(entries, name+"$meter")
					count++
				}
			}
			sub = appendU32(sub[:0], uint32(count))
			sub = append(sub, entries...)
			b = append(b, id)
			b = appendU32(b, uint32(len(sub)))
			b = append(b, sub...)
		case 3: // label names
		default:
			b = append(b, id)
			b = appendU32(b, size)
			b = append(b, payload...)
		}
	}
	return b
}

func skipNameMap(r *reader) bool {
	n, err := r.count(2)
	if err != nil {
		return false
	}
	for i := 0; i < n; i++ {
		if _, err := r.u32(); err != nil {
			return false
		}
		if _, err := r.name(); err != nil {
			return false
		}
	}
	return true
}

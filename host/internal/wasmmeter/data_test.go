package wasmmeter

import (
	"bytes"
	"testing"
)

// activeAt is an active data segment of memory 0 at offset.
func activeAt(offset int32, b string) []byte {
	return ins(byte(0), i32c(offset), opEnd, str(b))
}

// dataPayload is the payload of a module's data section (nil: none). It
// reads only section headers, since parseModule refuses a metered module.
func dataPayload(t *testing.T, wasm []byte) []byte {
	t.Helper()
	r := &reader{b: wasm, off: len(wasmHeader)}
	for !r.eof() {
		id, err := r.byte()
		if err != nil {
			t.Fatal(err)
		}
		n, err := r.u32()
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.bytes(int(n))
		if err != nil {
			t.Fatal(err)
		}
		if id == secData {
			return b
		}
	}
	return nil
}

// dataSegments counts a module's data segments.
func dataSegments(t *testing.T, wasm []byte) int {
	t.Helper()
	p := dataPayload(t, wasm)
	if p == nil {
		return 0
	}
	n, err := (&reader{b: p}).u32()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestDataSegmentsJoined: neighbouring active segments become one when
// nothing can tell, and the memory an instance starts with is the same
// (compare checks the exported memory); otherwise the section is kept.
func TestDataSegmentsJoined(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(m *tmod)
		want  int // segments after the rewrite
	}{
		{"neighbours with gaps", func(m *tmod) {
			m.datas = append(m.datas, activeAt(0, "ab"), activeAt(10, "cd"), activeAt(12, "ef"), activeAt(100, "gh"))
		}, 2}, // 0–13 joined; 100 is 86 bytes away
		{"out of memory order", func(m *tmod) {
			m.datas = append(m.datas, activeAt(20, "b"), activeAt(0, "a"), activeAt(21, "c"))
		}, 3}, // 20 and 0 are not neighbours in memory; 0 and 21 neither
		{"another segment in the gap", func(m *tmod) {
			m.datas = append(m.datas, activeAt(0, "a"), activeAt(40, "c"), activeAt(20, "b"))
		}, 3},
		{"overlapping segments", func(m *tmod) {
			m.datas = append(m.datas, activeAt(0, "aaaa"), activeAt(2, "bb"), activeAt(10, "c"))
		}, 3}, // the later one overwrites: left as it is
		{"a passive segment between", func(m *tmod) {
			m.datas = append(m.datas, activeAt(0, "a"), ins(byte(1), str("p")), activeAt(2, "b"), activeAt(3, "c"))
		}, 3},
		{"an empty segment", func(m *tmod) {
			m.datas = append(m.datas, activeAt(0, "a"), activeAt(1, ""), activeAt(2, "b"))
		}, 3},
		{"a data count section", func(m *tmod) {
			m.datas = append(m.datas, activeAt(0, "a"), activeAt(1, "b"))
			m.dataCount = true
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMod()
			m.memory(1)
			tc.build(m)
			f := m.fn(none, i32, nil, i32c(0), opI32Load, mem(2, 0))
			m.exportFn("first", f)
			orig := m.bytes()
			compare(t, orig, Options{}, calls("first"))
			metered, err := Instrument(orig, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := dataSegments(t, metered); got != tc.want {
				t.Errorf("%d data segments after the rewrite, want %d", got, tc.want)
			}
		})
	}
}

// TestDataJoinBoundsGrowth: joining writes out gaps of zeros; a module of
// one-byte segments maxDataGap apart must not grow past twice its data.
func TestDataJoinBoundsGrowth(t *testing.T) {
	m := newMod()
	m.memory(2)
	for i := range 1000 {
		m.datas = append(m.datas, activeAt(int32(i*(maxDataGap+1)), "x"))
	}
	orig := m.bytes()
	metered, err := Instrument(orig, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, after := dataPayload(t, orig), dataPayload(t, metered)
	if len(after) > 2*len(before)+maxDataGap {
		t.Errorf("the data section grew from %d to %d bytes", len(before), len(after))
	}
	if !bytes.Equal(before, after) && dataSegments(t, metered) == 1000 {
		t.Error("the section changed without joining anything")
	}
}

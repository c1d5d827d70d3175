package wasmmeter

import (
	"testing"
)

func BenchmarkInstrument(b *testing.B) {
	b.Run("textcheck", func(b *testing.B) {
		benchInstrument(b, buildGoGuest(b))
	})
	// About 10 MB in 50,000 functions.
	b.Run("synthetic50k", func(b *testing.B) {
		benchInstrument(b, largeModule(50_000, 9))
	})
}

func benchInstrument(b *testing.B, wasm []byte) {
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		var err error
		if out, err = Instrument(wasm, Options{MemoryBudget: 1 << 30}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out))/float64(len(wasm)), "out/in")
}

// largeModule has n functions shaped like Go's output: a loop around a
// br_table dispatch, blocks ending every few instructions, loads, stores
// and calls; each body repeats its middle reps times.
func largeModule(n, reps int) []byte {
	m := newMod()
	m.memory(1)
	var middle []byte
	for i := 0; i < reps; i++ {
		middle = append(middle, ins(
			block(blockEmpty),
			gget(0), i32c(8), opI32Sub, gset(0),
			gget(0), lget(0), opI32Store, mem(2, 0),
			lget(0), brIf(0),
			i32c(int32(i)), lset(1),
			opEnd,
		)...)
	}
	m.global(valI32, true, i32c(65536))
	for f := 0; f < n; f++ {
		callee := uint32(f+1) % uint32(n)
		m.fn(i32, i32, i32,
			loop(blockEmpty),
			block(blockEmpty), block(blockEmpty),
			lget(1), opBrTable, uleb(1), uleb(0), uleb(1),
			opEnd,
			middle,
			lget(0), call(callee), lset(1),
			opEnd,
			opEnd,
			lget(1))
	}
	m.exportFn("f0", 0)
	return m.bytes()
}

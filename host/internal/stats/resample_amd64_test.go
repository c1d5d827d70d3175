//go:build !noasm && !gccgo && !safe

package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDrawerIsIntN: the drawer's values are intN's on a math/rand/v2 PCG
// with the same state, draw for draw and across batches of every size,
// for every kind of n (TestIntNIsRandIntN holds intN to rand.IntN).
func TestDrawerIsIntN(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 7, 64, 1000, 20011, 1 << 40, math.MaxInt64/3 + 1, math.MaxInt64} {
		a, b := rand.NewPCG(9, uint64(n)), rand.NewPCG(9, uint64(n))
		d := newDrawer(b, n)
		var buf [17]int
		for i := 0; i < 20000; {
			m := i % len(buf)
			d.fill(buf[:m])
			for _, got := range buf[:m] {
				if want := intN(a, n); got != want {
					t.Fatalf("n %d, draw %d: %d; intN %d", n, i, got, want)
				}
				i++
			}
			i++
		}
	}
}

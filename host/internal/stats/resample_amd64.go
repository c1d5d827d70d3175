//go:build !noasm && !gccgo && !safe

package stats

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// resampler.sum draws len(xs) values of xs with replacement (intN on the
// source, in order) and returns their sum exactly as gonum's floats.Sum adds a slice
// holding them: on amd64 that is f64.Sum's SSE2 assembly, eight running
// sums (four registers of two lanes, value j into sum j mod 8, for the
// 16-wide loop and the 8-wide tail), folded pairwise before the 4- and
// 2-wide tails and the last value. The slice it sums is 16-byte aligned
// (every size class from 32 bytes is; below, at 8 and 24 bytes, the
// unaligned path adds in the same order), so the alignment trim never
// runs. Summing while drawing spares writing and reading back a slice of
// n values per resample (TestMeanCIIsBootstrap holds it to the bit).
type resampler struct{ d *drawer }

// newResampler draws from src's state onwards (src itself is not
// advanced: the draws come from the drawer's copy).
func newResampler(src *rand.PCG, n int) resampler { return resampler{newDrawer(src, n)} }

func (r resampler) sum(xs []float64) float64 {
	n, d := len(xs), r.d
	var idx [16]int
	var s0, s1, s2, s3, s4, s5, s6, s7 float64
	i := 0
	for ; i+16 <= n; i += 16 {
		d.fill(idx[:16])
		s0 += xs[idx[0]]
		s1 += xs[idx[1]]
		s2 += xs[idx[2]]
		s3 += xs[idx[3]]
		s4 += xs[idx[4]]
		s5 += xs[idx[5]]
		s6 += xs[idx[6]]
		s7 += xs[idx[7]]
		s0 += xs[idx[8]]
		s1 += xs[idx[9]]
		s2 += xs[idx[10]]
		s3 += xs[idx[11]]
		s4 += xs[idx[12]]
		s5 += xs[idx[13]]
		s6 += xs[idx[14]]
		s7 += xs[idx[15]]
	}
	tail := n - i
	d.fill(idx[:tail])
	t := idx[:tail]
	if tail&8 != 0 {
		s0 += xs[t[0]]
		s1 += xs[t[1]]
		s2 += xs[t[2]]
		s3 += xs[t[3]]
		s4 += xs[t[4]]
		s5 += xs[t[5]]
		s6 += xs[t[6]]
		s7 += xs[t[7]]
		t = t[8:]
	}
	s0, s1 = s0+s6, s1+s7 // ADDPD SUM_3, SUM
	s2, s3 = s2+s4, s3+s5 // ADDPD SUM_2, SUM_1
	if tail&4 != 0 {
		s0 += xs[t[0]]
		s1 += xs[t[1]]
		s2 += xs[t[2]]
		s3 += xs[t[3]]
		t = t[4:]
	}
	s0, s1 = s0+s2, s1+s3 // ADDPD SUM_1, SUM
	if tail&2 != 0 {
		s0 += xs[t[0]]
		s1 += xs[t[1]]
		t = t[2:]
	}
	s0 += s1 // HADDPD
	if tail&1 != 0 {
		s0 += xs[t[0]]
	}
	return s0
}

// drawer gives intN(src, n)'s values for one n from its own copy of a PCG's
// state, so the generator's 128-bit state stays in registers through a
// batch of draws; through *rand.PCG every draw was a call (intN, with its
// rejection loop, does not inline) storing the state back. The generator
// is math/rand/v2's PCG (multiply-add, DXSM output), the draw IntN's
// (Lemire's multiply with rejection; a mask for powers of two):
// TestDrawerIsIntN holds both to the standard library's, draw for draw.
type drawer struct {
	hi, lo uint64 // the PCG's state
	n      uint64
	thresh uint64 // 2⁶⁴ mod n: a product whose low word is below it is redrawn
	pow2   bool
}

func newDrawer(src *rand.PCG, n int) *drawer {
	b, _ := src.MarshalBinary() // "pcg:", hi, lo (big-endian); cannot fail
	un := uint64(n)
	return &drawer{
		hi: binary.BigEndian.Uint64(b[4:]), lo: binary.BigEndian.Uint64(b[12:]),
		n: un, thresh: -un % un, pow2: un&(un-1) == 0,
	}
}

// fill sets each element of dst to the next draw.
func (d *drawer) fill(dst []int) {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	shi, slo, n, thresh, pow2 := d.hi, d.lo, d.n, d.thresh, d.pow2
	for k := range dst {
		for {
			// PCG.next: state = state*mul + inc.
			hi, lo := bits.Mul64(slo, mulLo)
			hi += shi*mulLo + slo*mulHi
			lo, c := bits.Add64(lo, incLo, 0)
			hi, _ = bits.Add64(hi, incHi, c)
			shi, slo = hi, lo
			// PCG.Uint64: DXSM.
			hi ^= hi >> 32
			hi *= cheapMul
			hi ^= hi >> 48
			x := hi * (lo | 1)
			if pow2 {
				dst[k] = int(x & (n - 1))
				break
			}
			ph, pl := bits.Mul64(x, n)
			if pl >= thresh {
				dst[k] = int(ph)
				break
			}
		}
	}
	d.hi, d.lo = shi, slo
}

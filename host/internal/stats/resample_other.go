//go:build !amd64 || noasm || gccgo || safe

package stats

import "math/rand/v2"

// resampler.sum draws len(xs) values of xs with replacement (intN on the
// source, in order) and returns their sum as gonum's floats.Sum adds them
// where it has no assembly: one running sum, in order (resample_amd64.go
// is the assembly's order).
type resampler struct{ src *rand.PCG }

func newResampler(src *rand.PCG, n int) resampler { return resampler{src} }

func (r resampler) sum(xs []float64) float64 {
	n, src := len(xs), r.src
	var sum float64
	for range n {
		sum += xs[intN(src, n)]
	}
	return sum
}

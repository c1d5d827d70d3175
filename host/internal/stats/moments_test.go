package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestMomentsAreGonumStats: the mean, Pearson's r and the normal quantile
// used here are gonum stat's and distuv's, bit for bit, on series shaped
// like judge scores (ties, 0–10 integers, tiny and huge magnitudes,
// near-constant series) — gonum's stat package is only kept out of the
// binary, not out of the reference.
func TestMomentsAreGonumStats(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 7))
	gens := []func() float64{
		func() float64 { return float64(rng.IntN(11)) },
		func() float64 { return rng.Float64() },
		func() float64 { return rng.NormFloat64() * 1e12 },
		func() float64 { return 1 + rng.Float64()*1e-12 },
		func() float64 { return math.Round(rng.Float64()*4) / 4 },
	}
	for round := range 5000 {
		n := 1 + rng.IntN(60)
		gx, gy := gens[rng.IntN(len(gens))], gens[rng.IntN(len(gens))]
		x, y := make([]float64, n), make([]float64, n)
		for i := range n {
			x[i], y[i] = gx(), gy()
		}
		if got, want := Mean(x), stat.Mean(x, nil); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("round %d: Mean(%v) = %v, gonum %v", round, x, got, want)
		}
		if got, want := correlation(x, y), stat.Correlation(x, y, nil); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("round %d: correlation(%v, %v) = %v, gonum %v", round, x, y, got, want)
		}
	}
	for _, level := range []float64{0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 1 - 1e-9} {
		p := (1 + level) / 2
		w, err := WilsonCI(3, 10, level)
		if err != nil {
			t.Fatal(err)
		}
		// WilsonCI's z is the normal quantile; recompute the interval with
		// distuv's.
		z := distuv.UnitNormal.Quantile(p)
		nf, ph := 10.0, 0.3
		den := 1 + z*z/nf
		centre := (ph + z*z/(2*nf)) / den
		half := z / den * math.Sqrt(ph*(1-ph)/nf+z*z/(4*nf*nf))
		if w.Low != max(0, centre-half) || w.High != min(1, centre+half) {
			t.Fatalf("level %v: Wilson [%v, %v], with distuv's quantile [%v, %v]", level, w.Low, w.High, max(0, centre-half), min(1, centre+half))
		}
	}
}

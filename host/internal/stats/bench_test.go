package stats

import (
	"math/rand/v2"
	"testing"
)

// The costs calibrate and compare pay per metric: a Kendall τ-b interval
// (O(n²) per resample) and a paired mean-difference interval plus the
// permutation test, at DefaultResamples, on n cases.
func benchPairs(n int) (x, y []float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y = make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = float64(rng.IntN(11)) / 10
		y[i] = float64(rng.IntN(5) + 1)
	}
	return x, y
}

func BenchmarkKendallCI200(b *testing.B) {
	x, y := benchPairs(200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PairedCI(x, y, KendallTauB, DefaultLevel, DefaultResamples, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompareMetric1000(b *testing.B) {
	x, y := benchPairs(1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PairedMeanDiffCI(x, y, DefaultLevel, DefaultResamples, 1); err != nil {
			b.Fatal(err)
		}
		if _, err := PairedPermutationTest(x, y, DefaultResamples, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMeanCI20000 is the summary's interval of a metric's mean over
// bench/run.sh's 20,000 cases: 5,000 resamples of 20,000 draws of
// continuous scores (logprob-weighted), and of scores on a 0–10 grid and
// pass/fail scores, whose resamples' counts are drawn instead.
func BenchmarkMeanCI20000(b *testing.B) {
	grid, _ := benchPairs(20000)
	rng := rand.New(rand.NewPCG(3, 4))
	continuous, passFail := make([]float64, len(grid)), make([]float64, len(grid))
	for i := range continuous {
		continuous[i] = rng.Float64()
		passFail[i] = float64(rng.IntN(2))
	}
	for _, bc := range []struct {
		name string
		xs   []float64
	}{{"continuous", continuous}, {"grid", grid}, {"passfail", passFail}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := MeanCI(bc.xs, DefaultLevel, DefaultResamples, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

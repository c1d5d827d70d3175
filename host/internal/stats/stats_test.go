package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// expected is testdata/expected.json, written by testdata/expected.py with
// SciPy and the krippendorff package.
type expected struct {
	Correlation map[string]struct {
		X, Y        []float64
		Pearson     float64
		Spearman    float64
		KendallTauB float64   `json:"kendall_tau_b"`
		RanksX      []float64 `json:"ranks_x"`
	}
	Kappa map[string]struct {
		A, B  []int
		Kappa float64
	}
	Alpha map[string]struct {
		Units    [][]float64
		Interval float64
		Nominal  float64
	}
	Wilson []struct {
		Successes, N int
		Low, High    float64
	}
	Paired map[string]struct {
		A, B           []float64
		MeanDifference float64 `json:"mean_difference"`
		PValue         float64 `json:"p_value"`
		PValueLess     float64 `json:"p_value_less"`
		PValueGreater  float64 `json:"p_value_greater"`
	}
	BootstrapMean struct {
		Xs              []float64
		Mean, Low, High float64
	} `json:"bootstrap_mean"`
	BootstrapPearson struct{ Low, High float64 } `json:"bootstrap_pearson"`
}

func loadExpected(t *testing.T) expected {
	t.Helper()
	data, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.12g, want %.12g (±%g)", what, got, want, tol)
	}
}

func TestCorrelationsMatchSciPy(t *testing.T) {
	t.Parallel()
	e := loadExpected(t)
	if len(e.Correlation) == 0 {
		t.Fatal("no correlation cases in testdata/expected.json")
	}
	for name, c := range e.Correlation {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				fn   func(x, y []float64) (float64, error)
				want float64
			}{
				{"pearson", Pearson, c.Pearson},
				{"spearman", Spearman, c.Spearman},
				{"kendall tau-b", KendallTauB, c.KendallTauB},
			} {
				got, err := tc.fn(c.X, c.Y)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				near(t, tc.name, got, tc.want, 1e-12)
			}
			ranks := Ranks(c.X)
			for i := range ranks {
				near(t, "rank", ranks[i], c.RanksX[i], 0)
			}
		})
	}
}

func TestKendallDiffersFromGonumTauAWithTies(t *testing.T) {
	t.Parallel()
	// gonum's stat.Kendall is τ-a and counts tied pairs as concordant: on
	// these ties it reports a positive association where τ-b sees none.
	x := []float64{1, 1, 1, 2, 2, 2}
	y := []float64{1, 2, 3, 1, 2, 3}
	got, err := KendallTauB(x, y)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "tau-b", got, 0, 1e-15)
}

func TestCohenKappaMatchesIndependentComputation(t *testing.T) {
	t.Parallel()
	e := loadExpected(t)
	for name, c := range e.Kappa {
		t.Run(name, func(t *testing.T) {
			a, b := make([]bool, len(c.A)), make([]bool, len(c.B))
			for i := range c.A {
				a[i], b[i] = c.A[i] == 1, c.B[i] == 1
			}
			got, err := CohenKappa(a, b)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "kappa", got, c.Kappa, 1e-12)
			gotInts, err := CohenKappa(c.A, c.B)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "kappa over ints", gotInts, c.Kappa, 1e-12)
		})
	}
}

func TestKrippendorffAlphaMatchesPackage(t *testing.T) {
	t.Parallel()
	e := loadExpected(t)
	for name, c := range e.Alpha {
		t.Run(name, func(t *testing.T) {
			interval, err := KrippendorffAlpha(c.Units, Interval)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "interval alpha", interval, c.Interval, 1e-12)
			nominal, err := KrippendorffAlpha(c.Units, Nominal)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "nominal alpha", nominal, c.Nominal, 1e-12)
		})
	}
}

func TestWilsonMatchesSciPy(t *testing.T) {
	t.Parallel()
	e := loadExpected(t)
	for _, c := range e.Wilson {
		got, err := WilsonCI(c.Successes, c.N, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "wilson low", got.Low, c.Low, 1e-9)
		near(t, "wilson high", got.High, c.High, 1e-9)
		near(t, "wilson estimate", got.Estimate, float64(c.Successes)/float64(c.N), 1e-15)
	}
}

func TestPairedPermutationMatchesSciPy(t *testing.T) {
	t.Parallel()
	e := loadExpected(t)
	for name, c := range e.Paired {
		t.Run(name, func(t *testing.T) {
			got, err := PairedPermutationTest(c.A, c.B, 100000, 1)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "mean difference", got.MeanDifference, c.MeanDifference, 1e-12)
			tol := 1e-12
			if !got.Exact {
				// Two Monte Carlo estimates (2e5 and 1e5 draws) of p≈0.06: their
				// standard errors are below 0.001 each.
				tol = 0.005
			}
			near(t, "p-value", got.PValue, c.PValue, tol)
			near(t, "p-value less", got.PValueLess, c.PValueLess, tol)
			near(t, "p-value greater", got.PValueGreater, c.PValueGreater, tol)
			if got.Exact != (got.NonZero <= ExactPermutationLimit) {
				t.Errorf("exact = %v with %d non-zero differences", got.Exact, got.NonZero)
			}
		})
	}
}

func TestBootstrapMatchesSciPyWithinMonteCarloError(t *testing.T) {
	t.Parallel()
	e := loadExpected(t)
	got, err := MeanCI(e.BootstrapMean.Xs, 0.95, 100000, 42)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "mean", got.Estimate, e.BootstrapMean.Mean, 1e-12)
	// Means of 20 half-point scores lie on a grid of 0.025; two generators
	// may put a percentile one grid step apart.
	near(t, "low", got.Low, e.BootstrapMean.Low, 0.026)
	near(t, "high", got.High, e.BootstrapMean.High, 0.026)

	c := e.Correlation["judge_vs_human"]
	r, err := PairedCI(c.X, c.Y, Pearson, 0.95, 20000, 42)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "pearson", r.Estimate, c.Pearson, 1e-12)
	near(t, "pearson low", r.Low, e.BootstrapPearson.Low, 0.01)
	near(t, "pearson high", r.High, e.BootstrapPearson.High, 0.01)
}

func TestBootstrapIsDeterministicPerSeed(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 4, 2, 8, 5, 7, 3, 9, 6, 0}
	a, err := MeanCI(xs, 0.9, 1000, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := MeanCI(xs, 0.9, 1000, 7)
	c, _ := MeanCI(xs, 0.9, 1000, 8)
	if a != b {
		t.Errorf("same seed, different intervals: %+v and %+v", a, b)
	}
	if a == c {
		t.Errorf("different seeds, identical intervals %+v: is the seed used?", a)
	}
	if !(a.Low < a.Estimate && a.Estimate < a.High) || a.Level != 0.9 || a.N != 10 || a.Resamples != 1000 {
		t.Errorf("interval %+v", a)
	}
}

func TestBootstrapCoversNormalTheoryInterval(t *testing.T) {
	t.Parallel()
	// 400 values with mean 5 and standard deviation 2: the normal-theory
	// 95% interval of the mean is 5 ± 1.96·2/20 = [4.804, 5.196].
	xs := make([]float64, 400)
	for i := range xs {
		if i%2 == 0 {
			xs[i] = 3
		} else {
			xs[i] = 7
		}
	}
	got, err := MeanCI(xs, 0.95, DefaultResamples, 1)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "low", got.Low, 4.804, 0.02)
	near(t, "high", got.High, 5.196, 0.02)
}

func TestProportionAndPairedIntervals(t *testing.T) {
	t.Parallel()
	passes := []bool{true, true, false, true, true, false, true, true}
	p, err := ProportionCI(passes, 0.95, 2000, 3)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "pass rate", p.Estimate, 0.75, 1e-15)
	if p.Low < 0 || p.High > 1 || p.Low >= p.High {
		t.Errorf("pass-rate interval %+v", p)
	}
	all, err := ProportionCI([]bool{true, true, true}, 0.95, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	if all.Low != 1 || all.High != 1 {
		t.Errorf("all passing: bootstrap interval %+v, want the point [1,1]", all)
	}

	a := []float64{5, 6, 7, 8, 5, 6, 7, 8, 5, 6}
	b := []float64{4, 5, 6, 7, 4, 5, 6, 7, 4, 5}
	d, err := PairedMeanDiffCI(a, b, 0.95, 2000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d.Estimate != -1 || d.Low != -1 || d.High != -1 {
		t.Errorf("constant difference of -1: %+v", d)
	}
}

func TestFlipShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		perCase [][]bool
		flipped int
		share   float64
	}{
		{"none", nil, 0, 0},
		{"stable", [][]bool{{true, true}, {false, false, false}}, 0, 0},
		{"one of four", [][]bool{{true, false, true}, {true, true}, {false}, {}}, 1, 0.25},
		{"late flip", [][]bool{{false, false, false, true}, {true, false}}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CountFlips(tc.perCase); got != tc.flipped {
				t.Errorf("CountFlips = %d, want %d", got, tc.flipped)
			}
			if got := FlipShare(tc.perCase); got != tc.share {
				t.Errorf("FlipShare = %v, want %v", got, tc.share)
			}
		})
	}
}

func TestUndefinedStatisticsAreErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func() error
	}{
		{"pearson constant", func() error { _, err := Pearson([]float64{1, 2, 3}, []float64{4, 4, 4}); return err }},
		{"pearson one pair", func() error { _, err := Pearson([]float64{1}, []float64{2}); return err }},
		{"spearman constant", func() error { _, err := Spearman([]float64{2, 2}, []float64{1, 3}); return err }},
		{"kendall constant", func() error { _, err := KendallTauB([]float64{2, 2, 2}, []float64{1, 3, 2}); return err }},
		{"kappa one category", func() error { _, err := CohenKappa([]bool{true, true}, []bool{true, true}); return err }},
		{"kappa empty", func() error { _, err := CohenKappa([]bool{}, []bool{}); return err }},
		{"alpha all equal", func() error { _, err := KrippendorffAlpha([][]float64{{3, 3}, {3, 3, 3}}, Interval); return err }},
		{"alpha unpairable", func() error { _, err := KrippendorffAlpha([][]float64{{3}, {4}}, Nominal); return err }},
		{"mean of nothing", func() error { _, err := MeanCI(nil, 0.95, 10, 1); return err }},
		{"wilson of nothing", func() error { _, err := WilsonCI(0, 0, 0.95); return err }},
		{"test of nothing", func() error { _, err := PairedPermutationTest(nil, nil, 10, 1); return err }},
		{"bootstrap mostly undefined", func() error {
			// Defined only on resamples without a repeated unit: 8!/8^8 of them.
			_, err := Bootstrap(8, func(indices []int) (float64, error) {
				seen := map[int]bool{}
				for _, i := range indices {
					if seen[i] {
						return 0, fmt.Errorf("%w: repeated unit", ErrUndefined)
					}
					seen[i] = true
				}
				return 1, nil
			}, 0.95, 200, 1)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn(); !errors.Is(err, ErrUndefined) {
				t.Errorf("error %v, want ErrUndefined", err)
			}
		})
	}
}

func TestBadArgumentsAreErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func() error
	}{
		{"level 95", func() error { _, err := MeanCI([]float64{1, 2}, 95, 10, 1); return err }},
		{"no resamples", func() error { _, err := MeanCI([]float64{1, 2}, 0.95, 0, 1); return err }},
		{"NaN", func() error { _, err := MeanCI([]float64{1, math.NaN()}, 0.95, 10, 1); return err }},
		{"lengths", func() error { _, err := Pearson([]float64{1, 2}, []float64{1}); return err }},
		{"successes > n", func() error { _, err := WilsonCI(3, 2, 0.95); return err }},
		{"measurement", func() error { _, err := KrippendorffAlpha([][]float64{{1, 2}}, Measurement(9)); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.fn()
			if err == nil || errors.Is(err, ErrUndefined) {
				t.Errorf("error %v, want an argument error", err)
			}
		})
	}
}

func TestBootstrapSkipsAndCountsUndefinedResamples(t *testing.T) {
	t.Parallel()
	// One x differs from the rest: about (7/8)^8 ≈ 34% of resamples miss it
	// and leave x constant, where Pearson's r is undefined.
	x := []float64{1, 1, 1, 1, 1, 1, 1, 2}
	y := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	ci, err := PairedCI(x, y, Pearson, 0.95, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Resamples < 550 || ci.Resamples > 780 {
		t.Errorf("%d of 1000 resamples used, want about 660", ci.Resamples)
	}
}

// kendallPairs is τ-b by counting every pair, the definition itself, for
// checking the O(n log n) computation.
func kendallPairs(x, y []float64) float64 {
	var c, d, tx, ty float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			dx, dy := x[i]-x[j], y[i]-y[j]
			switch {
			case dx == 0 && dy == 0:
				tx++
				ty++
			case dx == 0:
				tx++
			case dy == 0:
				ty++
			case (dx > 0) == (dy > 0):
				c++
			default:
				d++
			}
		}
	}
	n0 := float64(len(x)) * float64(len(x)-1) / 2
	return (c - d) / math.Sqrt((n0-tx)*(n0-ty))
}

func TestKendallMatchesPairCounting(t *testing.T) {
	t.Parallel()
	rng := newRand(3)
	for trial := range 300 {
		n := 2 + rng.IntN(40)
		levels := 1 + rng.IntN(8) // few levels: many ties
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = float64(rng.IntN(levels))
			y[i] = float64(rng.IntN(levels + 1))
		}
		want := kendallPairs(x, y)
		got, err := KendallTauB(x, y)
		if math.IsNaN(want) {
			if !errors.Is(err, ErrUndefined) {
				t.Fatalf("trial %d: x %v y %v: %v, %v; want undefined", trial, x, y, got, err)
			}
			continue
		}
		if err != nil || math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: x %v y %v: τ-b %v (%v), want %v", trial, x, y, got, err, want)
		}
	}
}

// MeanCI's own loop gives Bootstrap's interval of the mean to the bit, on
// data of every shape the summary sees, and the same errors.
func TestMeanCIIsBootstrap(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	var sets [][]float64
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 24, 31, 50, 333, 2000, 4097, 20011} {
		xs := make([]float64, n)
		for i := range xs {
			switch n % 3 {
			case 0:
				xs[i] = float64(r.IntN(11)) / 10 // scores on a 0–10 scale
			case 1:
				xs[i] = r.NormFloat64() * 1e6
			default:
				xs[i] = r.Float64()
			}
		}
		sets = append(sets, xs)
		if n > 1 {
			sets = append(sets, xs[1:]) // starts 8 bytes off 16-byte alignment
		}
	}
	for _, xs := range sets {
		for _, tc := range []struct {
			level     float64
			resamples int
			seed      uint64
		}{{DefaultLevel, 200, 1}, {0.9, 1, 7}, {0.5, 999, 42}, {1.5, 10, 1}, {DefaultLevel, 0, 1}} {
			got, gerr := MeanCI(xs, tc.level, tc.resamples, tc.seed)
			want, werr := Bootstrap(len(xs), func(indices []int) (float64, error) {
				buf := make([]float64, len(indices))
				for i, idx := range indices {
					buf[i] = xs[idx]
				}
				return stat.Mean(buf, nil), nil
			}, tc.level, tc.resamples, tc.seed)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || got != want {
				t.Errorf("n %d, %+v: MeanCI %+v (%v); Bootstrap %+v (%v)", len(xs), tc, got, gerr, want, werr)
			}
		}
	}
}

// TestIntNIsRandIntN: the bootstrap's draws are math/rand/v2's IntN on the
// same source, value for value, for small n, powers of two, and n near
// 2^63 where the rejection loop runs on most draws.
func TestIntNIsRandIntN(t *testing.T) {
	t.Parallel()
	ns := []int{1, 2, 3, 7, 50, 64, 333, 2000, 20000, 1 << 40, 1<<62 + 1, 1<<63 - 1, 3 << 61, math.MaxInt/3*2 + 1}
	for _, n := range ns {
		a, b := rand.NewPCG(uint64(n), 9), rand.NewPCG(uint64(n), 9)
		ref := rand.New(b)
		for i := range 20000 {
			if got, want := intN(a, n), ref.IntN(n); got != want {
				t.Fatalf("n=%d, draw %d: intN = %d, rand.IntN = %d", n, i, got, want)
			}
		}
		if a.Uint64() != b.Uint64() {
			t.Fatalf("n=%d: the sources drifted apart (a different number of draws)", n)
		}
	}
}

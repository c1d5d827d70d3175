package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// The ported binomial draws what gonum's distuv.Binomial draws from the
// same source, variate for variate, on every branch it keeps.
func TestBinomialIsGonums(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n int
		p float64
	}{
		{1, 0.5}, {24, 0.3}, {24, 0.9}, {25, 0.5}, {25, 0.04}, {100, 0.01}, {100, 0.99},
		{1000, 0.5}, {20000, 0.37}, {100000, 0.001}, {100000, 0.999}, {1 << 20, 0.5},
	} {
		for seed := uint64(1); seed <= 20; seed++ {
			ours := newRand(seed)
			src := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
			gonum := distuv.Binomial{N: float64(tc.n), P: tc.p, Src: src}
			for i := range 50 {
				// gonum makes a rand.Rand per variate; both consume the one
				// source the same way, so the streams stay in step.
				got, want := binomial(ours, tc.n, tc.p), gonum.Rand()
				if float64(got) != want {
					t.Fatalf("n %d, p %g, seed %d, draw %d: %d, gonum %g", tc.n, tc.p, seed, i, got, want)
				}
			}
		}
	}
	r := newRand(1)
	for _, tc := range []struct {
		n    int
		p    float64
		want int
	}{{0, 0.5, 0}, {10, 0, 0}, {10, 1, 10}, {10, -1, 0}, {10, 2, 10}} {
		if got := binomial(r, tc.n, tc.p); got != tc.want {
			t.Errorf("binomial(%d, %g) = %d, want %d", tc.n, tc.p, got, tc.want)
		}
	}
}

func TestDistinctCounts(t *testing.T) {
	t.Parallel()
	rep := func(n int, vs ...float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = vs[i%len(vs)]
		}
		return out
	}
	manyValues := make([]float64, 65*countedCost)
	for i := range manyValues {
		manyValues[i] = float64(i % 65)
	}
	for _, tc := range []struct {
		name   string
		xs     []float64
		ok     bool
		values []float64
		counts []int
	}{
		{"too few units to pay", rep(countedCost-1, 1), false, nil, nil},
		{"one value", rep(countedCost, 1), true, []float64{1}, []int{countedCost}},
		{"two values need 2·countedCost units", rep(2*countedCost-1, 1, 0), false, nil, nil},
		{"pass/fail", rep(2*countedCost, 1, 0), true, []float64{0, 1}, []int{countedCost, countedCost}},
		{"ascending, −0 before 0", rep(4*countedCost, 0.5, 0, math.Copysign(0, -1), -3), true,
			[]float64{-3, math.Copysign(0, -1), 0, 0.5}, []int{countedCost, countedCost, countedCost, countedCost}},
		{"65 values", manyValues, false, nil, nil},
		{"64 values", manyValues[:64*countedCost], false, nil, nil}, // holds 65 distinct values in its first 64·64
	} {
		values, counts, ok := distinctCounts(tc.xs)
		if ok != tc.ok || !slices.Equal(counts, tc.counts) || len(values) != len(tc.values) {
			t.Errorf("%s: %v %v %v, want %v %v %v", tc.name, values, counts, ok, tc.values, tc.counts, tc.ok)
			continue
		}
		for i := range values {
			if math.Float64bits(values[i]) != math.Float64bits(tc.values[i]) {
				t.Errorf("%s: values %v, want %v", tc.name, values, tc.values)
			}
		}
	}
	sixtyFour := make([]float64, 64*countedCost)
	for i := range sixtyFour {
		sixtyFour[i] = float64(i % 64)
	}
	if _, counts, ok := distinctCounts(sixtyFour); !ok || len(counts) != 64 {
		t.Errorf("64 values over %d units: counted %v (%d values)", len(sixtyFour), ok, len(counts))
	}
}

// Drawing the counts is the same bootstrap as drawing indices: on data
// with few distinct values, the counted interval agrees with Bootstrap's
// (indices drawn one by one, gonum's mean) within Monte Carlo error, and
// so does the spread of the resample means.
func TestCountedMeanCIIsBootstrap(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 9))
	const resamples = 10000
	for _, tc := range []struct {
		name   string
		n      int
		sample func() float64
	}{
		{"pass rate 0.5", 2000, func() float64 { return float64(r.IntN(2)) }},
		{"pass rate 0.97", 5000, func() float64 { return b2f(r.Float64() < 0.97) }},
		{"pass rate 0.01", 10000, func() float64 { return b2f(r.Float64() < 0.01) }},
		{"0–10 grid", 3000, func() float64 { return float64(r.IntN(11)) / 10 }},
		{"skewed 1–5", 4000, func() float64 { return float64(min(5, 1+int(r.ExpFloat64()))) }},
		{"40 values", 8000, func() float64 { return float64(r.IntN(40)) - 20.5 }},
	} {
		xs := make([]float64, tc.n)
		for i := range xs {
			xs[i] = tc.sample()
		}
		if _, _, ok := distinctCounts(xs); !ok {
			t.Fatalf("%s: not counted", tc.name)
		}
		got, err := MeanCI(xs, DefaultLevel, resamples, 3)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Bootstrap(len(xs), func(indices []int) (float64, error) {
			buf := make([]float64, len(indices))
			for i, idx := range indices {
				buf[i] = xs[idx]
			}
			return stat.Mean(buf, nil), nil
		}, DefaultLevel, resamples, 3)
		if err != nil {
			t.Fatal(err)
		}
		se := stat.StdDev(xs, nil) / math.Sqrt(float64(len(xs)))
		// A 2.5% quantile of 10,000 resamples has a Monte Carlo error of
		// about 0.03 standard errors; two independent ones differ by
		// less than 0.2 all but never.
		if got.Estimate != want.Estimate || got.N != want.N || got.Resamples != want.Resamples {
			t.Errorf("%s: counted %+v, drawn %+v", tc.name, got, want)
		}
		near(t, tc.name+" low", got.Low, want.Low, 0.2*se)
		near(t, tc.name+" high", got.High, want.High, 0.2*se)

		distinct, counts, _ := distinctCounts(xs)
		means := make([]float64, resamples)
		countedMeans(means, distinct, counts, 4)
		m, sd := stat.MeanStdDev(means, nil)
		near(t, tc.name+" mean of the resample means", m, got.Estimate, 5*se/math.Sqrt(resamples))
		if ratio := sd / (stat.PopStdDev(xs, nil) / math.Sqrt(float64(len(xs)))); math.Abs(ratio-1) > 0.03 {
			t.Errorf("%s: resample means' spread is %.4f of the bootstrap's", tc.name, ratio)
		}
	}
}

func TestCountedMeanCIDeterministicAndDegenerate(t *testing.T) {
	t.Parallel()
	passes := make([]bool, 10000)
	for i := range passes {
		passes[i] = true
	}
	all, err := ProportionCI(passes, DefaultLevel, DefaultResamples, 1)
	if err != nil || all.Low != 1 || all.High != 1 || all.Estimate != 1 {
		t.Errorf("all of 10,000 passing: %+v (%v), want the point [1,1]", all, err)
	}
	for i := 0; i < len(passes); i += 40 {
		passes[i] = false
	}
	a, _ := ProportionCI(passes, DefaultLevel, DefaultResamples, 1)
	b, _ := ProportionCI(passes, DefaultLevel, DefaultResamples, 1)
	c, _ := ProportionCI(passes, DefaultLevel, DefaultResamples, 2)
	if a != b || a == c {
		t.Errorf("seed 1 twice: %+v, %+v; seed 2: %+v", a, b, c)
	}
	// Every resample mean of 0/1 data is a count over n: the bounds lie on
	// that grid.
	for _, v := range []float64{a.Low, a.High} {
		if k := v * 10000; math.Abs(k-math.Round(k)) > 1e-6 {
			t.Errorf("bound %v is not a multiple of 1/10000", v)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

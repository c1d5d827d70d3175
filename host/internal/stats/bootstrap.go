package stats

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mathext"
)

// DefaultLevel and DefaultResamples are what Anvil's commands use unless
// told otherwise. 5000 resamples keep the Monte Carlo error of a 95%
// percentile bound well below the second decimal of a 0–10 score for the
// sample sizes of an evaluation, at a cost of milliseconds.
const (
	DefaultLevel     = 0.95
	DefaultResamples = 5000
)

// Statistic computes a statistic over the units named by indices (indices
// into the caller's data, with repeats in a resample). It returns an error
// wrapping ErrUndefined when the statistic has no value on those units;
// the bootstrap skips such resamples.
type Statistic func(indices []int) (float64, error)

// Bootstrap returns the percentile bootstrap interval of statistic over n
// units: the statistic on all units as the estimate, and the (1−level)/2
// and (1+level)/2 quantiles of the statistic on `resamples` resamples of n
// units drawn with replacement. The generator is seeded with seed, so the
// result is reproducible. Quantiles interpolate linearly between order
// statistics (numpy's default), so bounds line up with
// scipy.stats.bootstrap(method="percentile").
func Bootstrap(n int, statistic Statistic, level float64, resamples int, seed uint64) (CI, error) {
	if err := checkLevel(level); err != nil {
		return CI{}, err
	}
	if resamples < 1 {
		return CI{}, fmt.Errorf("bootstrap with %d resamples: want at least 1 (%d is the default)", resamples, DefaultResamples)
	}
	if n < 1 {
		return CI{}, undefined("bootstrap over no units")
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	estimate, err := statistic(all)
	if err != nil {
		return CI{}, err
	}
	rng := newRand(seed)
	values := make([]float64, 0, resamples)
	indices := make([]int, n)
	for range resamples {
		for i := range indices {
			indices[i] = rng.IntN(n)
		}
		v, err := statistic(indices)
		if errors.Is(err, ErrUndefined) {
			continue
		}
		if err != nil {
			return CI{}, err
		}
		values = append(values, v)
	}
	if 2*len(values) < resamples {
		return CI{}, undefined("bootstrap: the statistic is undefined on %d of %d resamples of %d units", resamples-len(values), resamples, n)
	}
	return percentileCI(values, estimate, level, n), nil
}

// newRand is the one place a generator is made: PCG, seeded by the caller.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// intN is rand.New(src).IntN(n) — the same draws from src, the same
// results (TestIntNIsRandIntN) — without the call through rand.Rand's
// Source interface, which was a third of a 20,000-case summary's 10⁸
// draws; the summary's bootstrap runs after the last judge call, so its
// time is the run's. This is math/rand/v2's algorithm for 64-bit ints
// (Lemire's multiply-shift with rejection); where int is 32 bits it
// defers to rand.Rand.
func intN(src *rand.PCG, n int) int {
	if n <= 0 {
		panic("stats: intN of a non-positive n")
	}
	if math.MaxInt != math.MaxInt64 {
		return rand.New(src).IntN(n)
	}
	un := uint64(n)
	if un&(un-1) == 0 {
		return int(src.Uint64() & (un - 1))
	}
	hi, lo := bits.Mul64(src.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), un)
		}
	}
	return int(hi)
}

// quantile of sorted values, linear between order statistics at position
// p·(len−1) (numpy's "linear", Hyndman–Fan type 7).
func quantile(sorted []float64, p float64) float64 {
	pos := p * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[hi]-sorted[lo])
}

// MeanCI returns the mean of xs with its percentile bootstrap interval.
func MeanCI(xs []float64, level float64, resamples int, seed uint64) (CI, error) {
	if err := checkFinite("xs", xs); err != nil {
		return CI{}, err
	}
	if len(xs) == 0 {
		return CI{}, undefined("mean of no values")
	}
	return meanBootstrap(xs, level, resamples, seed)
}

// meanBootstrap is Bootstrap(len(xs), the mean of the units, …) with each
// resample summed as it is drawn (resampler) rather than into indices
// first: the same draws from the same generator in the same order, added
// in the order gonum's floats.Sum adds them, so the same interval to the
// bit (TestMeanCIIsBootstrap), without writing and reading back a value
// per draw. That loop is N × resamples: 10⁸ draws for the summary of a
// 20,000-case run. When xs has few distinct values for its size, the
// resamples' counts are drawn instead (countboot.go): the same
// distribution at a cost independent of N.
func meanBootstrap(xs []float64, level float64, resamples int, seed uint64) (CI, error) {
	if err := checkLevel(level); err != nil {
		return CI{}, err
	}
	if resamples < 1 {
		return CI{}, fmt.Errorf("bootstrap with %d resamples: want at least 1 (%d is the default)", resamples, DefaultResamples)
	}
	n := len(xs)
	// The estimate from a fresh (so 16-byte aligned) copy: f64.Sum adds
	// in another order when a slice starts off that alignment.
	estimate := mean(append([]float64(nil), xs...))
	values := make([]float64, resamples)
	if distinct, counts, ok := distinctCounts(xs); ok {
		countedMeans(values, distinct, counts, seed)
		return percentileCI(values, estimate, level, n), nil
	}
	src := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15) // newRand's source
	draw := newResampler(src, n)
	for r := range values {
		values[r] = draw.sum(xs) / float64(n) // mean's division
	}
	return percentileCI(values, estimate, level, n), nil
}

// ProportionCI returns the share of true values (a pass rate) with its
// percentile bootstrap interval. When every value is the same the
// bootstrap interval collapses to a point ([1, 1] for 10 passes of 10);
// WilsonCI does not, and is the better interval for a pass rate near 0 or
// 1 or with few cases.
func ProportionCI(passes []bool, level float64, resamples int, seed uint64) (CI, error) {
	xs := make([]float64, len(passes))
	for i, p := range passes {
		if p {
			xs[i] = 1
		}
	}
	if len(xs) == 0 {
		return CI{}, undefined("proportion of no values")
	}
	return MeanCI(xs, level, resamples, seed)
}

// WilsonCI returns the share successes/n with its Wilson score interval,
// the closed-form interval for a binomial proportion that stays inside
// [0,1] and does not collapse at 0 or n successes.
func WilsonCI(successes, n int, level float64) (CI, error) {
	if err := checkLevel(level); err != nil {
		return CI{}, err
	}
	if n < 1 {
		return CI{}, undefined("proportion of no values")
	}
	if successes < 0 || successes > n {
		return CI{}, fmt.Errorf("%d successes out of %d: want between 0 and n", successes, n)
	}
	z := mathext.NormalQuantile((1 + level) / 2)
	nf := float64(n)
	p := float64(successes) / nf
	denominator := 1 + z*z/nf
	centre := (p + z*z/(2*nf)) / denominator
	half := z / denominator * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return CI{
		Estimate: p,
		Low:      max(0, centre-half),
		High:     min(1, centre+half),
		Level:    level,
		N:        n,
	}, nil
}

// PairedMeanDiffCI returns the mean of b[i] − a[i] with its percentile
// bootstrap interval, resampling pairs (cases) so that each case's two
// scores stay together.
func PairedMeanDiffCI(a, b []float64, level float64, resamples int, seed uint64) (CI, error) {
	if err := checkPaired(a, b); err != nil {
		return CI{}, err
	}
	diffs := make([]float64, len(a))
	for i := range a {
		diffs[i] = b[i] - a[i]
	}
	if len(diffs) == 0 {
		return CI{}, undefined("mean difference of no pairs")
	}
	return MeanCI(diffs, level, resamples, seed)
}

// PairedCI returns statistic(x, y) with the percentile bootstrap interval
// from resampling pairs (x[i], y[i]) — the interval of a correlation
// (Pearson, Spearman, KendallTauB) or of any other paired statistic.
// Resamples on which the statistic is undefined (every resampled x equal)
// are skipped, as Bootstrap describes.
func PairedCI(x, y []float64, statistic func(x, y []float64) (float64, error), level float64, resamples int, seed uint64) (CI, error) {
	if err := checkPaired(x, y); err != nil {
		return CI{}, err
	}
	bx := make([]float64, len(x))
	by := make([]float64, len(y))
	return Bootstrap(len(x), func(indices []int) (float64, error) {
		bx, by = bx[:len(indices)], by[:len(indices)]
		for i, idx := range indices {
			bx[i], by[i] = x[idx], y[idx]
		}
		return statistic(bx, by)
	}, level, resamples, seed)
}

// percentileCI is the percentile interval of the resampled statistics
// values (sorted in place) around estimate.
func percentileCI(values []float64, estimate, level float64, n int) CI {
	slices.Sort(values)
	return CI{
		Estimate:  estimate,
		Low:       quantile(values, (1-level)/2),
		High:      quantile(values, (1+level)/2),
		Level:     level,
		N:         n,
		Resamples: len(values),
	}
}

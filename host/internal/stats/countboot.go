package stats

import (
	"math"
	"slices"
)

// A mean's resample depends only on how many times each distinct value
// was drawn, and those counts are multinomial: n draws over the distinct
// values with the shares they have in xs. When xs holds few distinct
// values — pass/fail and exact-match scores (two), a judge's raw integer
// scores (eleven) — drawing the counts (one binomial per distinct value
// but the last) is the same resample distribution as drawing n indices,
// at a cost that does not grow with n: a 100,000-case summary spent 3 s
// of CPU (11% of its run) drawing 5·10⁸ indices. It is the same
// percentile bootstrap, not the same draws, so its bounds differ from the
// index-drawing loop's by Monte Carlo error (TestCountedMeanCIIsBootstrap
// holds them within it); the same data and seed always give the same
// interval. docs/RATIONALE.md: "Why does a mean's bootstrap draw counts
// when the scores take few values?"

const (
	// maxCountedValues bounds the distinct values drawn by counts.
	maxCountedValues = 64
	// countedCost is roughly what one binomial variate costs in index
	// draws (a few logarithms, log-gammas and a tangent against ≈ 6 ns a
	// draw): the counts are drawn only when they are the cheaper way,
	// k·countedCost ≤ n, so small inputs keep the index loop and its
	// intervals.
	countedCost = 64
)

// distinctCounts returns xs's distinct values in ascending order with how
// many times each occurs, or ok false when counting does not pay: more
// than maxCountedValues values, or more than n/countedCost. Values are
// told apart by their bits (0 and −0 are two values; their counts add the
// same zero).
func distinctCounts(xs []float64) (values []float64, counts []int, ok bool) {
	limit := min(maxCountedValues, len(xs)/countedCost)
	if limit < 1 {
		return nil, nil, false
	}
	var bits [maxCountedValues]uint64
	var cnt [maxCountedValues]int
	k := 0
next:
	for _, x := range xs {
		b := math.Float64bits(x)
		for i := range k {
			if bits[i] == b {
				cnt[i]++
				continue next
			}
		}
		if k == limit {
			return nil, nil, false
		}
		bits[k], cnt[k] = b, 1
		k++
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		fa, fb := math.Float64frombits(bits[a]), math.Float64frombits(bits[b])
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return int(bits[b]>>63) - int(bits[a]>>63) // −0 before 0
	})
	values, counts = make([]float64, k), make([]int, k)
	for i, o := range order {
		values[i], counts[i] = math.Float64frombits(bits[o]), cnt[o]
	}
	return values, counts, true
}

// countedMeans fills means with the means of len(means) resamples of n
// units whose distinct values and counts are given, drawing each
// resample's counts value by value: the i-th count is binomial over the
// draws not yet assigned, with the i-th value's share of the units not
// yet assigned; the last value takes the rest.
func countedMeans(means []float64, values []float64, counts []int, seed uint64) {
	n := 0
	for _, c := range counts {
		n += c
	}
	rng := newRand(seed)
	last := len(values) - 1
	for r := range means {
		draws, units := n, n
		sum := 0.0
		for i, v := range values {
			c := draws
			if i < last {
				c = binomial(rng, draws, float64(counts[i])/float64(units))
				units -= counts[i]
			}
			draws -= c
			sum += float64(c) * v
		}
		means[r] = sum / float64(n)
	}
}

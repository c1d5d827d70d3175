package stats

import (
	"fmt"
	"math"
)

// ExactPermutationLimit is the largest number of non-zero paired
// differences for which PairedPermutationTest enumerates every sign
// assignment (2^20 ≈ one million) instead of drawing random ones.
const ExactPermutationLimit = 20

// TestResult is the outcome of a two-sided paired test.
type TestResult struct {
	// MeanDifference is the observed mean of b[i] − a[i] over all pairs.
	MeanDifference float64 `json:"mean_difference"`
	// PValue is the two-sided p-value: the probability, with no difference
	// between a and b, of a mean difference at least this far from zero.
	PValue float64 `json:"p_value"`
	// PValueLess and PValueGreater are the one-sided p-values: the
	// probability, with no difference, of a mean difference at most (at
	// least) the observed one. PValueLess tests "b is lower than a" — the
	// question of a regression gate.
	PValueLess    float64 `json:"p_value_less"`
	PValueGreater float64 `json:"p_value_greater"`
	// Exact is true when every sign assignment was enumerated; otherwise
	// Permutations random ones were drawn.
	Exact        bool `json:"exact"`
	Permutations int  `json:"permutations"`
	// N is the number of pairs; NonZero of them differ.
	N       int `json:"n"`
	NonZero int `json:"nonzero"`
}

// PairedPermutationTest tests whether paired scores a and b differ, by the
// sign-flip permutation test of the mean difference: with no difference,
// each pair's difference b[i] − a[i] is as likely to have either sign, so
// the p-value is the share of sign assignments whose mean difference is at
// least as far from zero as the observed one.
//
// It is the test chosen for comparing runs because it tests exactly the
// statistic the interval of PairedMeanDiffCI is about (the mean
// difference, not a median or a rank sum), it needs no normal
// approximation and no tie correction — judge scores on a 0–10 scale give
// many equal and many zero differences, which the Wilcoxon signed-rank
// test handles only approximately — and it is exact for up to
// ExactPermutationLimit non-zero differences. Pairs with zero difference
// flip to themselves and are left out of the enumeration. Above the limit
// `resamples` random sign assignments are drawn from a generator seeded
// with seed and p = (1 + hits) / (1 + resamples), which is never 0.
// Equality with the observed statistic is judged with a relative tolerance
// of 1e-9 so that rounding does not decide a tie. The p-values are those of
// scipy.stats.permutation_test(permutation_type="samples") with
// alternative "two-sided", "less" and "greater".
func PairedPermutationTest(a, b []float64, resamples int, seed uint64) (TestResult, error) {
	if err := checkPaired(a, b); err != nil {
		return TestResult{}, err
	}
	if len(a) == 0 {
		return TestResult{}, undefined("paired test of no pairs")
	}
	var nonzero []float64
	var sum, scale float64
	for i := range a {
		d := b[i] - a[i]
		sum += d
		if d != 0 {
			nonzero = append(nonzero, d)
			scale += math.Abs(d)
		}
	}
	result := TestResult{MeanDifference: sum / float64(len(a)), N: len(a), NonZero: len(nonzero)}
	if len(nonzero) == 0 {
		result.PValue, result.PValueLess, result.PValueGreater = 1, 1, 1
		result.Exact, result.Permutations = true, 1
		return result, nil
	}
	tol := 1e-9 * scale
	var hits extremes
	count := func(s float64) {
		if math.Abs(s) >= math.Abs(sum)-tol {
			hits.twoSided++
		}
		if s <= sum+tol {
			hits.less++
		}
		if s >= sum-tol {
			hits.greater++
		}
	}
	if len(nonzero) <= ExactPermutationLimit {
		total := 1 << len(nonzero)
		for signs := range total {
			var s float64
			for i, d := range nonzero {
				if signs&(1<<i) != 0 {
					s -= d
				} else {
					s += d
				}
			}
			count(s)
		}
		result.PValue, result.PValueLess, result.PValueGreater = hits.share(0, float64(total))
		result.Exact, result.Permutations = true, total
		return result, nil
	}
	if resamples < 1 {
		return TestResult{}, fmt.Errorf("permutation test with %d resamples: want at least 1 (%d is the default)", resamples, DefaultResamples)
	}
	rng := newRand(seed)
	for range resamples {
		var s float64
		for i := 0; i < len(nonzero); i += 64 {
			bits := rng.Uint64()
			for j := i; j < min(i+64, len(nonzero)); j++ {
				if bits&(1<<(j-i)) != 0 {
					s -= nonzero[j]
				} else {
					s += nonzero[j]
				}
			}
		}
		count(s)
	}
	result.PValue, result.PValueLess, result.PValueGreater = hits.share(1, float64(1+resamples))
	result.Permutations = resamples
	return result, nil
}

// extremes counts sign assignments at least as extreme as the observed one.
type extremes struct{ twoSided, less, greater int }

// share turns the counts into p-values: (plus + hits) / total each.
func (t extremes) share(plus, total float64) (twoSided, less, greater float64) {
	return (plus + float64(t.twoSided)) / total, (plus + float64(t.less)) / total, (plus + float64(t.greater)) / total
}

package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Pearson returns Pearson's product-moment correlation r of x and y.
// It is undefined for fewer than two pairs or when either series is
// constant.
func Pearson(x, y []float64) (float64, error) {
	if err := checkPaired(x, y); err != nil {
		return 0, err
	}
	if len(x) < 2 {
		return 0, undefined("correlation of %d pairs: want at least 2", len(x))
	}
	if constant(x) || constant(y) {
		return 0, undefined("correlation of a constant series")
	}
	return clampUnit(stat.Correlation(x, y, nil)), nil
}

// Spearman returns Spearman's rank correlation ρ of x and y: Pearson's r of
// their ranks, tied values sharing the average of their ranks (as
// scipy.stats.spearmanr).
func Spearman(x, y []float64) (float64, error) {
	if err := checkPaired(x, y); err != nil {
		return 0, err
	}
	return Pearson(Ranks(x), Ranks(y))
}

// Ranks returns the 1-based ranks of xs; tied values get the average of the
// ranks they span ("average" ranking).
func Ranks(xs []float64) []float64 {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	ranks := make([]float64, len(xs))
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && xs[order[end]] == xs[order[start]] {
			end++
		}
		// Positions start..end-1 hold ranks start+1..end; their mean:
		avg := float64(start+1+end) / 2
		for _, idx := range order[start:end] {
			ranks[idx] = avg
		}
		start = end
	}
	return ranks
}

// KendallTauB returns Kendall's τ-b of x and y, which corrects τ for ties
// in either series:
//
//	τ_b = (C − D) / sqrt((n0 − n1)(n0 − n2))
//
// with C and D the concordant and discordant pairs, n0 = n(n−1)/2, n1 and
// n2 the pairs tied in x and in y. It is the coefficient
// scipy.stats.kendalltau reports by default. The count is over all pairs,
// O(n²): calibration sets are hundreds of cases, not millions.
func KendallTauB(x, y []float64) (float64, error) {
	if err := checkPaired(x, y); err != nil {
		return 0, err
	}
	n := len(x)
	if n < 2 {
		return 0, undefined("Kendall's tau of %d pairs: want at least 2", n)
	}
	var concordant, discordant, tiedX, tiedY float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dx := x[i] - x[j]
			dy := y[i] - y[j]
			switch {
			case dx == 0 && dy == 0:
				tiedX++
				tiedY++
			case dx == 0:
				tiedX++
			case dy == 0:
				tiedY++
			case (dx > 0) == (dy > 0):
				concordant++
			default:
				discordant++
			}
		}
	}
	pairs := float64(n) * float64(n-1) / 2
	denominator := math.Sqrt((pairs - tiedX) * (pairs - tiedY))
	if denominator == 0 {
		return 0, undefined("Kendall's tau of a constant series")
	}
	return clampUnit((concordant - discordant) / denominator), nil
}

func constant(xs []float64) bool {
	for _, x := range xs[1:] {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// clampUnit keeps rounding error from reporting a correlation of
// 1.0000000000000002.
func clampUnit(r float64) float64 { return max(-1, min(1, r)) }

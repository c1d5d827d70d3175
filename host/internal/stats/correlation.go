package stats

import (
	"cmp"
	"math"
	"slices"
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
	return clampUnit(correlation(x, y)), nil
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
// scipy.stats.kendalltau reports by default. It is computed in O(n log n)
// by Knight's method (as SciPy does): sort by x then y, count the pairs
// tied in x (n1) and in both (n3), count D as the inversions of y in that
// order with a merge sort, count the pairs tied in y (n2), and
// C − D = n0 − n1 − n2 + n3 − 2D. Bootstrapping it over thousands of
// resamples of a large calibration set stays cheap.
func KendallTauB(x, y []float64) (float64, error) {
	if err := checkPaired(x, y); err != nil {
		return 0, err
	}
	n := len(x)
	if n < 2 {
		return 0, undefined("Kendall's tau of %d pairs: want at least 2", n)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(x[a], x[b]); c != 0 {
			return c
		}
		return cmp.Compare(y[a], y[b])
	})
	ys := make([]float64, n)
	for i, idx := range order {
		ys[i] = y[idx]
	}
	var tiedX, tiedXY float64
	for start := 0; start < n; {
		end, jointStart := start+1, start
		for end < n && x[order[end]] == x[order[start]] {
			if ys[end] != ys[end-1] {
				tiedXY += pairs(end - jointStart)
				jointStart = end
			}
			end++
		}
		tiedXY += pairs(end - jointStart)
		tiedX += pairs(end - start)
		start = end
	}
	discordant := float64(inversions(ys, make([]float64, n)))
	// ys is now sorted: runs of equal values are the ties in y.
	var tiedY float64
	for start := 0; start < n; {
		end := start + 1
		for end < n && ys[end] == ys[start] {
			end++
		}
		tiedY += pairs(end - start)
		start = end
	}
	total := pairs(n)
	denominator := math.Sqrt((total - tiedX) * (total - tiedY))
	if denominator == 0 {
		return 0, undefined("Kendall's tau of a constant series")
	}
	return clampUnit((total - tiedX - tiedY + tiedXY - 2*discordant) / denominator), nil
}

func pairs(k int) float64 { return float64(k) * float64(k-1) / 2 }

// inversions sorts xs ascending (merge sort, buf as scratch of the same
// length) and returns the number of pairs i < j with xs[i] > xs[j].
func inversions(xs, buf []float64) int {
	if len(xs) < 2 {
		return 0
	}
	mid := len(xs) / 2
	count := inversions(xs[:mid], buf[:mid]) + inversions(xs[mid:], buf[mid:])
	i, j, k := 0, mid, 0
	for i < mid && j < len(xs) {
		if xs[j] < xs[i] {
			// xs[j] is below every remaining element of the left half.
			count += mid - i
			buf[k] = xs[j]
			j++
		} else {
			buf[k] = xs[i]
			i++
		}
		k++
	}
	k += copy(buf[k:], xs[i:mid])
	copy(buf[k:], xs[j:])
	copy(xs, buf)
	return count
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

package stats

// CountFlips returns how many cases have pass/fail samples that disagree:
// perCase[i] holds case i's pass/fail over its repeated samples, and the
// case flipped when they are not all equal. A case with fewer than two
// samples cannot flip.
func CountFlips(perCase [][]bool) int {
	flipped := 0
	for _, samples := range perCase {
		for _, s := range samples[min(1, len(samples)):] {
			if s != samples[0] {
				flipped++
				break
			}
		}
	}
	return flipped
}

// FlipShare returns the share of cases whose pass/fail differs across
// their samples: CountFlips over all cases, including those with one sample
// (which count as stable). It is 0 for no cases. For an interval, use
// WilsonCI(CountFlips(perCase), len(perCase), level).
func FlipShare(perCase [][]bool) float64 {
	if len(perCase) == 0 {
		return 0
	}
	return float64(CountFlips(perCase)) / float64(len(perCase))
}

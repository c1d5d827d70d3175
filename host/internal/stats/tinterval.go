package stats

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// MeanTCI returns the mean of xs with its Student t interval: the
// interval for a handful of values from one source (a judge's samples of
// one case), where a bootstrap of two or three values only reproduces
// them. Values all equal give a zero-width interval; one value has no
// interval (ErrUndefined).
func MeanTCI(xs []float64, level float64) (CI, error) {
	if err := checkFinite("xs", xs); err != nil {
		return CI{}, err
	}
	if err := checkLevel(level); err != nil {
		return CI{}, err
	}
	n := len(xs)
	if n < 2 {
		return CI{}, undefined("a t interval of fewer than two values")
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	sd := math.Sqrt(ss / float64(n-1))
	half := StudentTQuantile((1+level)/2, float64(n-1)) * sd / math.Sqrt(float64(n))
	return CI{Estimate: m, Low: m - half, High: m + half, Level: level, N: n}, nil
}

// StudentTQuantile is the p-quantile of Student's t with nu degrees of
// freedom, for p in [0.5, 1): through the inverse regularised incomplete
// beta function, I_x(ν/2, 1/2) = 2(1−p) at x = ν/(ν+t²).
func StudentTQuantile(p, nu float64) float64 {
	if p == 0.5 {
		return 0
	}
	x := mathext.InvRegIncBeta(nu/2, 0.5, 2*(1-p))
	return math.Sqrt(nu * (1 - x) / x)
}

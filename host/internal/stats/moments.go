package stats

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// The mean and Pearson's r are computed here rather than by gonum's stat
// package, whose import brings gonum's mat, LAPACK, BLAS and LP packages
// into every build of anvil-host — about 7 s of CPU on a cold first build
// (bench/README.md, "First run: README's main command, cold"; docs/RATIONALE.md). Both are
// gonum's own algorithms, and the tests check them against gonum's stat
// bit for bit.

// mean is stat.Mean(x, nil).
func mean(x []float64) float64 {
	return floats.Sum(x) / float64(len(x))
}

// Mean returns the arithmetic mean of x (NaN when x is empty), as
// gonum's stat.Mean(x, nil).
func Mean(x []float64) float64 {
	return mean(x)
}

// correlation is stat.Correlation(x, y, nil): the two-pass corrected
// algorithm of Chan, Golub and LeVeque, as gonum implements it.
func correlation(x, y []float64) float64 {
	xu, yu := mean(x), mean(y)
	var sxx, syy, sxy, xcompensation, ycompensation float64
	for i, xv := range x {
		xd := xv - xu
		yd := y[i] - yu
		sxx += xd * xd
		syy += yd * yd
		sxy += xd * yd
		xcompensation += xd
		ycompensation += yd
	}
	n := float64(len(x))
	sxx -= xcompensation * xcompensation / n
	syy -= ycompensation * ycompensation / n
	return (sxy - xcompensation*ycompensation/n) / math.Sqrt(sxx*syy)
}

package stats

import (
	"math"
	"math/rand/v2"
)

// binomial draws from the binomial distribution of n trials with success
// probability p, consuming rng exactly as gonum's distuv.Binomial{N: n,
// P: p, Src: src}.Rand() consumes rand.New(src) — the same draws, the same
// variates (TestBinomialIsGonums). It is gonum's algorithm (Numerical
// Recipes' bnldev: direct counting below 25 trials, rejection with a
// Cauchy proposal above) ported here because distuv's import brings mat,
// LAPACK and BLAS into every build of anvil-host, as stat's would
// (moments.go). Only its exact branches are kept: the caller never asks
// for a mean n·min(p, 1−p) below 1 with 25 trials or more (a count of a
// distinct value is at least 1), and such a call counts directly, which
// is exact too, where gonum would use a Poisson proposal.
//
// Copyright ©2018 The Gonum Authors (BSD-3-Clause, as gonum's LICENSE):
// the rejection loop below is gonum's stat/distuv/binomial.go.
func binomial(rng *rand.Rand, n int, p float64) int {
	switch {
	case n <= 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	}
	nf := float64(n)
	q := p
	if q > 0.5 {
		q = 1 - q
	}
	am := nf * q
	if n < 25 || am < 1 {
		k := 0
		for range n {
			if rng.Float64() < q {
				k++
			}
		}
		if q != p {
			return n - k
		}
		return k
	}
	g, _ := math.Lgamma(nf + 1)
	plog := math.Log(q)
	pclog := math.Log1p(-q)
	sq := math.Sqrt(2 * am * (1 - q))
	for {
		var em, y float64
		for {
			y = math.Tan(math.Pi * rng.Float64())
			em = sq*y + am
			if em >= 0 && em < nf+1 {
				break
			}
		}
		em = math.Floor(em)
		lg1, _ := math.Lgamma(em + 1)
		lg2, _ := math.Lgamma(nf - em + 1)
		t := 1.2 * sq * (1 + y*y) * math.Exp(g-lg1-lg2+em*plog+(nf-em)*pclog)
		if rng.Float64() <= t {
			if q != p {
				return n - int(em)
			}
			return int(em)
		}
	}
}

// Package stats is the statistics of judgement quality: agreement between
// two sets of scores (Pearson, Spearman, Kendall τ-b, Cohen's κ,
// Krippendorff's α), confidence intervals (percentile bootstrap for a mean,
// a proportion, a paired mean difference or any statistic of resampled
// units; Wilson for a proportion), a paired sign-flip permutation test and
// the flip share of repeated pass/fail samples.
//
// Invariants:
//
//   - Deterministic: every random step draws from a PCG generator seeded by
//     the caller (math/rand/v2), so the same inputs and seed give the same
//     interval on every machine and every run. Nothing reads the clock or a
//     global generator.
//   - Inputs are never modified.
//   - A statistic that is undefined for its input (a correlation of a
//     constant series, a mean of nothing, κ when both raters use one
//     category) is an error wrapping ErrUndefined, never a NaN or a silent
//     zero: NaN cannot be written as JSON and a zero would read as "no
//     agreement". Bootstrap resamples on which the statistic is undefined
//     are skipped and counted (CI.Resamples is the number used); when
//     fewer than half are defined the interval is an ErrUndefined error.
//   - Levels are fractions in (0,1): 0.95 is a 95% interval.
//
// Well-kept code is used where it serves: gonum's floats for sums and
// mathext.NormalQuantile for the Wilson quantile. Pearson's r (Spearman is
// Pearson of tie-averaged ranks) and the mean are gonum stat's algorithms
// ported into moments.go, and the binomial variates of a mean's bootstrap
// by counts (countboot.go) distuv's, ported into binomial.go, because
// importing gonum's stat or distuv package compiles LAPACK into
// anvil-host; the tests hold them to gonum bit for bit. gonum's stat.Kendall is τ-a
// and counts tied pairs as concordant, so Kendall τ-b (the coefficient
// scipy.stats.kendalltau reports, which corrects for ties — judge scores
// on a 0–10 scale tie constantly) is computed here.
//
// The expected values in the tests come from SciPy and the krippendorff
// package (testdata/expected.py), not from this code.
package stats

// Package compare tells a regression from noise between two runs of the
// same evaluation: for each metric, the mean score difference (B − A) on
// the cases both runs scored, with a paired bootstrap interval and a paired
// permutation test (host/internal/stats), and the cases whose pass/fail
// flipped, pass→fail first.
//
// Invariants:
//
//   - Only cases both runs scored (status passed or failed) are paired; a
//     case one run errored on, skipped or lacks is counted, never paired
//     with a guess.
//   - A metric is "worse" only when the difference is significant both
//     ways: the interval of B − A lies wholly below zero and the
//     permutation test's p-value is below 1 − level. Either alone can be
//     tipped by a resampling accident on a small set; both is what a CI
//     gate that must ignore noise asks for. "better" is the mirror image.
//   - Runs are comparable only under one evaluation: the same metrics with
//     the same kind, threshold and gate, under one config hash. Otherwise
//     Compare returns a *MismatchError saying what differs, unless
//     Options.AllowConfigChange (then the shared metrics are compared and
//     the differences are reported).
//   - Deterministic: the same runs and seed give the same report.
//   - Inputs are read, never written.
package compare

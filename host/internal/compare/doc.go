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
//   - A metric is "worse" when the one-sided paired permutation test of
//     "B is lower than A" gives p < 1 − level (0.05 at the default 95%).
//     The test is exact up to 20 changed cases, needs no normal
//     approximation, and asks the gate's question: one-sided, because a
//     gate fails on a regression, not on an improvement (two-sided, five
//     cases that all dropped could never reach p < 0.05: 2/32). "better"
//     is the mirror image. The bootstrap interval of B − A is reported
//     for the size of the change; it does not decide (percentile
//     intervals are too narrow on a handful of cases).
//   - Runs are comparable only under one evaluation: the same metrics with
//     the same kind, threshold and gate, under one config hash, scored by
//     the same judges as resolved (a model or endpoint from the
//     environment is not in the hash) with built-in kinds of the same
//     source (identity.Run in summary.json), each shared case asking the
//     same question (identity.CaseDigest; the answers under test may
//     differ). Otherwise Compare returns a *MismatchError saying what
//     differs, unless Options.AllowConfigChange (then the shared metrics
//     are compared and the differences are reported). What cannot be
//     checked — runs written before identities were recorded — is a
//     warning, not a refusal.
//   - Deterministic: the same runs and seed give the same report.
//   - Inputs are read, never written.
package compare

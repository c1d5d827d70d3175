// Package calibrate measures how well each metric's judge agrees with human
// labels: Spearman's ρ, Kendall's τ-b and Pearson's r between the judge's
// scores and the humans', Cohen's κ between the judge's pass/fail and the
// humans', and Krippendorff's α among several human raters (and, for
// pass/fail, with the judge as one more rater) — each with a percentile
// bootstrap interval over cases (host/internal/stats).
//
// Invariants:
//
//   - The labels file is checked whole before anything is computed (or
//     evaluated): every problem is an error naming file:line and the field;
//     a label for a metric the config does not have, or for a case the
//     dataset (or the results) does not have, is an error, not a silent
//     skip.
//   - Only cases the judge scored (status passed or failed) are paired
//     with labels; labelled cases the judge errored on or skipped are
//     counted, never paired with a guess.
//   - A statistic undefined on the data (constant scores, one category) is
//     absent from Agreement and its reason is in Undefined — never NaN,
//     never a zero that would read as "no agreement".
//   - Deterministic: the same labels, results and seed give the same
//     report.
package calibrate

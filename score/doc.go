// Package score turns a G-Eval judge reply into a score: it locates the
// integer the judge wrote, weights it by the judge's token
// log-probabilities, normalises it, and checks rubric bands. It follows
// DeepEval's G-Eval with that implementation's defects fixed (see the end of
// this comment).
//
// # Locating the score
//
// Numbers are read as literals: a run of ASCII digits that is not glued to
// a letter, digit or '_' ("gpt4", "7a" are no scores), optionally with a
// fraction. "7.0" (any all-zero fraction) is the integer 7; "7.5" is no
// integer at all (its "5" is not taken either). A '-' sign is read only
// when the range admits negative scores. The "10" of "7/10" or "7 out of
// 10" is a denominator and is never taken.
//
// The search runs over the generated tokens' concatenated text, from the
// END, so that a digit inside the reason before the score is not taken. A
// literal right after the score field's JSON key (`"score": 7`) is
// preferred, then one after a bare label (`Score: 7`, `**Score:** 7`,
// `score = 7`), then any literal; within a rank the last one wins. With
// raw given (the reply's parsed JSON field) the literal must have that
// value; without it the score is the reply's JSON score field when the
// content is a JSON object (possibly fenced or wrapped in prose), else the
// last integer literal inside [Min,Max] by the same ranking. Only when no
// integer inside the range can be found at all (raw outside the range, no
// number, the JSON field not an integer) is there an error, wrapping
// ErrNoScore and naming what was found.
//
// When the score is known but absent from the tokens (tokens that do not
// spell the content, a raw that the reply does not contain), the result
// falls back to raw with that cause rather than weighting some other
// number.
//
// # Weighting
//
// Let position 0 be the token that holds the score's first digit. Its top
// alternatives (plus the generated token itself if the provider did not
// list it; each distinct text once) with probability >= 1%
// (logprob >= ln 0.01) whose text, trimmed of whitespace and quotes, is a
// decimal integer of ASCII digits are read as follows.
//
//   - An alternative that differs from the digits the generated token
//     contributed leaves the path the judge actually took. It stands for the
//     integer it spells: the judge is assumed to have ended the number there.
//     " 7" and "7" both stand for 7 and their probabilities add up.
//   - The alternative that equals the generated digits (" 1" counts as
//     "1") is on the path. If the generated number continues in the next
//     token ("1","0" for 10), or could still continue into an in-range
//     number ("1" on a 0–10 scale could become 10), its probability p is
//     split by the next token's alternatives q, again at >= 1%: a digit
//     token that was actually generated continues the path (recursively);
//     a non-digit (",", "}", " ", ".") ends the number there, giving the
//     digits so far with p·q; any other digits end it after them ("1" then
//     "5" is 15, dropped if outside the range).
//   - An off-path alternative that is pure digits and a proper prefix of a
//     longer in-range integer ("1" when 10 is in range) depends on the
//     judge's tokenizer, which the caller states (NumberTokens): with
//     NumbersWhole ("10" is one token) it means 1; with NumbersDigits
//     (numbers written digit by digit) it may begin 10, so it is ambiguous
//     and dropped. The rule is the judge's, never inferred from the reply:
//     the same alternatives at the score's position weigh the same whatever
//     the reason text says. (An earlier version kept the "1" only when some
//     token of the reply held two adjacent digits, so a "25" in the reason
//     moved the score.) FromTokens uses NumbersDigits.
//
// For example, with tokens `"score": ` `1` `0` `}` on a 0–10 scale, where
// the "1" position lists "1" 0.6, "9" 0.3, "8" 0.1 and the "0" position
// lists "0" 0.8, "}" 0.15, "5" 0.05: 10 gets 0.6·0.8 = 0.48, 1 gets
// 0.6·0.15 = 0.09, 15 is outside the range, 9 gets 0.3 and 8 gets 0.1, and
// the score is (10·0.48 + 1·0.09 + 9·0.3 + 8·0.1)/0.97 = 8.6495. A score
// written as one token ("10", "7", " 7") needs only position 0, exactly as
// in DeepEval; "7.0" is handled the same way as "7".
//
// Surviving values outside [Min,Max] are dropped. Candidates lists each
// remaining value once, ascending, with its summed probability as computed
// above: not renormalised (they need not add up to 1; dividing by their sum
// is what the weighted mean does). Value = Σ v·p / Σ p, which lies in
// [Min,Max] (and is clamped there against rounding).
//
// # Fallbacks
//
// Mode is "weighted" when at least one candidate survives. Otherwise the
// result is Mode "raw" with Value = Raw and Cause one of: "no logprobs
// returned"; "score N not found in the generated tokens"; "score token "7"
// has no top alternatives"; "no alternative at score token "7" survived: 2
// below 1%, 1 not a decimal integer, 1 outside [1,10], ..." counting every
// dropped alternative by reason.
//
// FromSamples is the fallback for judges without logprobs: the mean of n
// sampled scores (Mode "sampled", Spread the population standard deviation).
//
// # Normalisation and rubrics
//
// Normalize maps [min,max] to [0,1] by (g − min)/(max − min), clamped; a
// zero-width or inverted range is a configuration error (ErrRange).
//
// Rubric bands (DeepEval's Rubric: score_range [start,end] and an
// expected_outcome) must be integers within 0–10, start <= end, sorted by
// start and disjoint: [0,3] and [3,5] overlap because both hold 3. Uncovered
// scores between bands are warnings. RubricRange gives the score range a
// rubric implies (0–10 without bands) and BandFor the band a score rounds
// into.
//
// # Differences from DeepEval
//
// DeepEval (deepeval/metrics/g_eval/utils.py, calculate_weighted_summed_score)
// takes the FIRST generated token, scanning forward, whose text is exactly
// str(score), keeps its top alternatives with logprob >= ln 0.01 for which
// Python's str.isdecimal() holds, and returns Σ v·p / Σ p. Consequences this
// package avoids:
//
//   - a digit in the reason equal to the score is taken instead of the
//     score itself (we scan from the end and prefer the JSON key);
//   - a score split over tokens ("1","0") or written with a leading space
//     (" 7") is never found, and a non-integer score (7.0 parsed as a float)
//     never matches, so weighting silently does not happen (we handle split
//     scores, spaces and ".0");
//   - " 7" fails isdecimal() and is dropped instead of adding to 7, while
//     non-ASCII decimal digits ("٧") pass it (we trim whitespace and quotes
//     and accept ASCII digits only);
//   - candidates are not checked against the score range, so an
//     alternative "100" or "0" on a 1–10 scale enters the mean (we drop
//     them), and the normalised score is not clamped (we clamp);
//   - any failure (no matching token, everything filtered: division by
//     zero) is caught by the caller, which returns the raw score with no
//     indication (in some versions the ZeroDivisionError escapes instead);
//     we report Mode "raw" and the Cause.
//
// # Dependencies
//
// The G-Eval guest (plugins/geval, a Wasm module) and the host weight
// replies with this same code, so it is neutral: it imports the standard
// library and abi only — nothing under host/, no runtime, no network — and
// so links into a guest as small as it links into the host. TestNeutral
// holds that, and that the G-Eval guest links nothing of the host.
package score

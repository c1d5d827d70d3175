package score

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Errors returned (wrapped) by this package.
var (
	// ErrNoScore: no usable integer score (none in the reply, one outside the
	// range, no samples).
	ErrNoScore = errors.New("no usable score")
	// ErrRange: the score range is empty or inverted (a configuration error).
	ErrRange = errors.New("invalid score range")
	// ErrRubric: the rubric bands are invalid (a configuration error).
	ErrRubric = errors.New("invalid rubric")
)

// DefaultField is the JSON field that holds the score when ScoreSpec.Field
// is empty.
const DefaultField = "score"

func checkRange(lo, hi int) error {
	switch {
	case hi == lo:
		return fmt.Errorf("%w: zero-width score range [%d,%d]", ErrRange, lo, hi)
	case hi < lo:
		return fmt.Errorf("%w: score range [%d,%d] has max below min", ErrRange, lo, hi)
	}
	return nil
}

// FromJudgeTokens locates the integer score in a judge reply and weights it by
// the judge's token log-probabilities (see the package documentation for
// the rules). numbers is how the judge's tokenizer writes integers
// (NumbersWhole or NumbersDigits); any other value is an error.
//
// content is the reply text and tokens its generated tokens with their top
// alternatives (empty when the judge returned no logprobs). raw is the
// integer parsed from the reply's JSON score field when the reply was
// structured, nil otherwise; without it the score is read from content.
//
// The result's Mode is "weighted" when at least one candidate survived,
// else "raw" with Value = Raw and a Cause saying why. The error, wrapping
// ErrNoScore or ErrRange, is reserved for replies without any usable score
// and for an invalid spec.
func FromJudgeTokens(numbers NumberTokens, content string, tokens []abi.TokenLogprob, spec abi.ScoreSpec, raw *int) (abi.ScoreResult, error) {
	lo, hi := spec.Min, spec.Max
	if err := checkRange(lo, hi); err != nil {
		return abi.ScoreResult{}, err
	}
	if err := checkNumbers(numbers); err != nil {
		return abi.ScoreResult{}, err
	}
	field := spec.Field
	if field == "" {
		field = DefaultField
	}
	text := joinTokens(tokens)

	var score int
	if raw != nil {
		score = *raw
		if score < lo || score > hi {
			return abi.ScoreResult{}, fmt.Errorf("%w: the reply's score %d is outside [%d,%d]", ErrNoScore, score, lo, hi)
		}
	} else {
		v, err := findScore(content, text, field, lo, hi)
		if err != nil {
			return abi.ScoreResult{}, err
		}
		score = v
	}
	if len(tokens) == 0 {
		return rawResult(score, "no logprobs returned"), nil
	}
	var buf [16]literal
	lits := appendLiterals(buf[:0], text, field, lo < 0)
	i := pick(lits, func(l literal) bool { return l.value == score })
	if i < 0 {
		return rawResult(score, fmt.Sprintf("score %d not found in the generated tokens", score)), nil
	}
	return weigh(tokens, text, lits[i], lo, hi, score, numbers == NumbersWhole), nil
}

// joinTokens is the tokens' text, built in one allocation.
func joinTokens(tokens []abi.TokenLogprob) string {
	n := 0
	for _, t := range tokens {
		n += len(t.Token)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, t := range tokens {
		sb.WriteString(t.Token)
	}
	return sb.String()
}

// FromSamples is the sampling fallback for judges without logprobs: the
// score is the mean of several sampled integer scores. Value is the mean,
// Spread the population standard deviation, Raw the first sample, and
// Candidates each distinct value with its relative frequency. Cause says
// how many samples were taken; a caller that knows why it sampled may
// replace it.
func FromSamples(values []int, spec abi.ScoreSpec) (abi.ScoreResult, error) {
	lo, hi := spec.Min, spec.Max
	if err := checkRange(lo, hi); err != nil {
		return abi.ScoreResult{}, err
	}
	if len(values) == 0 {
		return abi.ScoreResult{}, fmt.Errorf("%w: no samples", ErrNoScore)
	}
	var bad []string
	counts := map[int]int{}
	for _, v := range values {
		if v < lo || v > hi {
			bad = append(bad, strconv.Itoa(v))
		}
		counts[v]++
	}
	if len(bad) > 0 {
		return abi.ScoreResult{}, fmt.Errorf("%w: samples outside [%d,%d]: %s", ErrNoScore, lo, hi, strings.Join(bad, ", "))
	}
	n := float64(len(values))
	var sum float64
	for _, v := range values {
		sum += float64(v)
	}
	mean := sum / n
	var ss float64
	for _, v := range values {
		d := float64(v) - mean
		ss += d * d
	}
	res := abi.ScoreResult{
		Raw:    values[0],
		Value:  min(max(mean, float64(lo)), float64(hi)),
		Mode:   abi.ScoreSampled,
		Cause:  fmt.Sprintf("mean of %d samples", len(values)),
		Spread: math.Sqrt(ss / n),
	}
	for v, c := range counts {
		res.Candidates = append(res.Candidates, abi.ScoreCandidate{Value: v, Probability: float64(c) / n})
	}
	slices.SortFunc(res.Candidates, func(a, b abi.ScoreCandidate) int { return a.Value - b.Value })
	return res, nil
}

// Normalize maps a score on the scale [min,max] to [0,1]:
// (value − min)/(max − min), clamped. A range with max <= min is a
// configuration error (wrapping ErrRange), and so is a NaN value.
func Normalize(value float64, min, max int) (float64, error) {
	if err := checkRange(min, max); err != nil {
		return 0, err
	}
	if math.IsNaN(value) {
		return 0, fmt.Errorf("%w: score is NaN", ErrNoScore)
	}
	n := (value - float64(min)) / (float64(max) - float64(min))
	switch {
	case n < 0:
		return 0, nil
	case n > 1:
		return 1, nil
	}
	return n, nil
}

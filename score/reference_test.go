package score

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// The weighting as it was before it stopped allocating (a map per token
// for the alternatives, a map for the mass, a slice of token ends): the
// reference FuzzSameAsReference holds FromJudgeTokens to, bit for bit.

// refWeigher expands the judge's probability tree along the path it actually
// took through the score's tokens (see the package documentation).
type refWeigher struct {
	tokens []abi.TokenLogprob
	pos    int    // index of the token holding the score's first digit
	digits string // the score's digits as written (no sign, no ".0")
	head   string // the digits the token at pos contributes
	onPath bool   // the token at pos ends where its digits end, so the next token continues the path
	lo, hi int
	merges bool // the judge's tokenizer writes multi-digit numbers as one token (NumbersWhole)
	mass   map[int]float64
	t      tally
}

// alternatives returns a token's top alternatives, each text once (the
// first listing wins), plus the generated token itself when the provider
// did not list it.
func refAlternatives(tok abi.TokenLogprob) []abi.TopLogprob {
	out := make([]abi.TopLogprob, 0, len(tok.Top)+1)
	seen := make(map[string]bool, len(tok.Top)+1)
	for _, a := range tok.Top {
		if !seen[a.Token] {
			seen[a.Token] = true
			out = append(out, a)
		}
	}
	if !seen[tok.Token] {
		out = append(out, abi.TopLogprob{Token: tok.Token, Logprob: tok.Logprob})
	}
	return out
}

// prob converts a logprob to a probability, or tallies why it is unusable.
func (w *refWeigher) prob(lp float64) (float64, bool) {
	switch {
	case math.IsNaN(lp):
		w.t.invalid++
		return 0, false
	case lp < minLogprob:
		w.t.below++
		return 0, false
	}
	return min(math.Exp(lp), 1), true
}

// extendable reports whether digits (with the sign neg) is a proper prefix
// of the decimal form of some integer in [lo,hi]: "1" on a 0–10 scale (10).
func (w *refWeigher) extendable(neg bool, digits string) bool {
	if digits == "" || digits[0] == '0' {
		return false // no decimal form has a leading zero
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return false
	}
	// The absolute values allowed for this sign.
	var alo, ahi int
	if neg {
		if w.lo >= 0 {
			return false
		}
		alo, ahi = 1, -w.lo
		if w.hi < 0 {
			alo = -w.hi
		}
	} else {
		if w.hi < 0 {
			return false
		}
		alo, ahi = max(w.lo, 0), w.hi
	}
	for pow := 10; n <= ahi/pow; pow *= 10 {
		// The integers with prefix n and k more digits are [n·10^k, n·10^k+10^k-1].
		// The loop condition keeps first <= ahi; written so as not to overflow.
		if first := n * pow; first >= alo || alo-first <= pow-1 {
			return true
		}
		if pow > math.MaxInt/10 {
			break
		}
	}
	return false
}

// add credits probability p to the integer spelt by digits.
func (w *refWeigher) add(neg bool, digits string, p float64) {
	v, err := strconv.Atoi(digits)
	if err != nil {
		w.t.outside++
		return
	}
	if neg {
		v = -v
	}
	if v < w.lo || v > w.hi {
		w.t.outside++
		return
	}
	w.mass[v] += p
}

// offPath credits an alternative that left the actual path: it stands for
// the number it completes, unless it is pure digits that could still go on
// to a longer in-range score and the tokenizer splits numbers into digits.
func (w *refWeigher) offPath(neg bool, digits string, pure bool, p float64) {
	if pure && !w.merges && w.extendable(neg, digits) {
		w.t.ambiguous++
		return
	}
	w.add(neg, digits, p)
}

// first weighs the alternatives at the score's first token.
func (w *refWeigher) first(litNeg, signOutside bool) {
	tok := w.tokens[w.pos]
	for _, a := range refAlternatives(tok) {
		p, ok := w.prob(a.Logprob)
		if !ok {
			continue
		}
		neg, digits, ok := parseFirst(a.Token)
		if ok && signOutside {
			// The '-' was generated before this position; the alternatives
			// replace the digits after it.
			ok, neg = !neg, true
		}
		if !ok {
			w.t.notInt++
			continue
		}
		if neg == litNeg && digits == w.head && w.onPath {
			w.expand(1, digits, neg, p)
			continue
		}
		w.offPath(neg, digits, true, p)
	}
}

// expand continues the actual path at token pos+k, where prefix (with
// probability p) has been generated so far.
func (w *refWeigher) expand(k int, prefix string, neg bool, p float64) {
	full := len(prefix) >= len(w.digits)
	if full && !w.extendable(neg, prefix) {
		w.add(neg, prefix, p)
		return
	}
	j := w.pos + k
	if j >= len(w.tokens) {
		// The reply ended right after the number.
		if full {
			w.add(neg, prefix, p)
		}
		return
	}
	actual := w.tokens[j].Token
	for _, a := range refAlternatives(w.tokens[j]) {
		q, ok := w.prob(a.Logprob)
		if !ok {
			continue
		}
		g := leadingDigits(a.Token)
		switch {
		case g == "":
			// Anything but a digit ends the number here.
			w.add(neg, prefix, p*q)
		case !full && a.Token == actual && g == a.Token:
			// The generated continuation, still pure digits.
			w.expand(k+1, prefix+g, neg, p*q)
		default:
			w.offPath(neg, prefix+g, g == a.Token, p*q)
		}
	}
}

// weigh computes the weighted score for the literal l located in the
// tokens' text.
func refWeigh(tokens []abi.TokenLogprob, text string, l literal, lo, hi, raw int, wholeNumbers bool) abi.ScoreResult {
	ends := make([]int, len(tokens))
	off := 0
	for i, t := range tokens {
		off += len(t.Token)
		ends[i] = off
	}
	// owner returns the token holding byte b of text.
	owner := func(b int) int {
		i, _ := slices.BinarySearchFunc(ends, b, func(e, b int) int {
			if e <= b {
				return -1
			}
			return 1
		})
		return i
	}
	pos := owner(l.ds)
	tok := tokens[pos]
	if len(tok.Top) == 0 {
		return rawResult(raw, fmt.Sprintf("score token %q has no top alternatives", tok.Token))
	}
	w := &refWeigher{
		tokens: tokens,
		pos:    pos,
		digits: text[l.ds:l.de],
		head:   text[l.ds:min(l.de, ends[pos])],
		onPath: ends[pos] <= l.de,
		lo:     lo,
		hi:     hi,
		merges: wholeNumbers,
		mass:   map[int]float64{},
	}
	w.first(l.neg, l.neg && owner(l.start) < pos)
	if len(w.mass) == 0 {
		return rawResult(raw, fmt.Sprintf("no alternative at score token %q survived: %s", tok.Token, w.t.String(lo, hi)))
	}
	res := abi.ScoreResult{Raw: raw, Mode: abi.ScoreWeighted}
	var sum, weighted float64
	for v, p := range w.mass {
		res.Candidates = append(res.Candidates, abi.ScoreCandidate{Value: v, Probability: p})
	}
	slices.SortFunc(res.Candidates, func(a, b abi.ScoreCandidate) int { return a.Value - b.Value })
	for _, c := range res.Candidates {
		sum += c.Probability
		weighted += float64(c.Value) * c.Probability
	}
	res.Value = min(max(weighted/sum, float64(lo)), float64(hi))
	return res
}

func refFromJudgeTokens(numbers NumberTokens, content string, tokens []abi.TokenLogprob, spec abi.ScoreSpec, raw *int) (abi.ScoreResult, error) {
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
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteString(t.Token)
	}
	text := sb.String()

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
	lits := literals(text, field, lo < 0)
	i := pick(lits, func(l literal) bool { return l.value == score })
	if i < 0 {
		return rawResult(score, fmt.Sprintf("score %d not found in the generated tokens", score)), nil
	}
	return refWeigh(tokens, text, lits[i], lo, hi, score, numbers == NumbersWhole), nil
}

// sameResult compares two results bit for bit (floats by their bits).
func sameResult(a, b abi.ScoreResult) bool {
	if a.Raw != b.Raw || a.Mode != b.Mode || a.Cause != b.Cause ||
		math.Float64bits(a.Value) != math.Float64bits(b.Value) || math.Float64bits(a.Spread) != math.Float64bits(b.Spread) ||
		len(a.Candidates) != len(b.Candidates) {
		return false
	}
	for i := range a.Candidates {
		if a.Candidates[i].Value != b.Candidates[i].Value ||
			math.Float64bits(a.Candidates[i].Probability) != math.Float64bits(b.Candidates[i].Probability) {
			return false
		}
	}
	return true
}

func checkSameAsReference(t *testing.T, numbers NumberTokens, content string, toks []abi.TokenLogprob, spec abi.ScoreSpec, raw *int) {
	t.Helper()
	got, err := FromJudgeTokens(numbers, content, toks, spec, raw)
	want, werr := refFromJudgeTokens(numbers, content, toks, spec, raw)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("error %v; the reference says %v", err, werr)
	}
	if !sameResult(got, want) {
		t.Fatalf("result %+v; the reference gives %+v", got, want)
	}
}

// manyAlternatives is a score token with n alternatives "0".."9" and
// longer digit strings, some listed twice, the generated one last or not
// at all.
func manyAlternatives(gen string, n int, listGen bool) abi.TokenLogprob {
	tok := abi.TokenLogprob{Token: gen, Logprob: -0.3}
	for k := range n {
		a := strconv.Itoa(k % (n/2 + 1)) // every value about twice
		if a == gen && !listGen {
			a = "x" + a
		}
		tok.Top = append(tok.Top, abi.TopLogprob{Token: a, Logprob: -float64(k%7) / 3})
	}
	return tok
}

func TestSameAsReference(t *testing.T) {
	t.Parallel()
	head := abi.TokenLogprob{Token: `{"score": `, Top: []abi.TopLogprob{{Token: `{"score": `}}}
	tail := abi.TokenLogprob{Token: "}", Logprob: -0.1, Top: []abi.TopLogprob{{Token: "}", Logprob: -0.1}, {Token: ",", Logprob: -2}, {Token: "}", Logprob: -1}}}
	tests := []struct {
		name string
		toks []abi.TokenLogprob
		lo   int
		hi   int
	}{
		{"duplicates, generated listed", []abi.TokenLogprob{head, manyAlternatives("7", 10, true), tail}, 0, 10},
		{"generated not listed", []abi.TokenLogprob{head, manyAlternatives("7", 10, false), tail}, 0, 10},
		{"40 alternatives: the set path", []abi.TokenLogprob{head, manyAlternatives("7", 40, true), tail}, 0, 100},
		{"40 alternatives, generated not listed", []abi.TokenLogprob{head, manyAlternatives("7", 40, false), tail}, 0, 100},
		{"over 16 values credited", []abi.TokenLogprob{head, manyAlternatives("1", 64, true), manyAlternatives("2", 64, true), tail}, 0, 127},
		{"split number, 32 alternatives each", []abi.TokenLogprob{head, manyAlternatives("1", 32, true), manyAlternatives("0", 32, true), tail}, 0, 10},
		{"split number, 33 alternatives each", []abi.TokenLogprob{head, manyAlternatives("1", 33, true), manyAlternatives("0", 33, true), tail}, 0, 10},
		{"negative, sign a token of its own", []abi.TokenLogprob{head, {Token: "-", Top: []abi.TopLogprob{{Token: "-"}}}, manyAlternatives("3", 12, true), tail}, -5, 5},
		{"empty tokens around", []abi.TokenLogprob{{Token: ""}, head, {Token: ""}, manyAlternatives("7", 8, true), {Token: ""}, tail}, 0, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var content strings.Builder
			for _, tok := range tc.toks {
				content.WriteString(tok.Token)
			}
			for _, numbers := range []NumberTokens{NumbersWhole, NumbersDigits} {
				checkSameAsReference(t, numbers, content.String(), tc.toks, abi.ScoreSpec{Min: tc.lo, Max: tc.hi}, nil)
				res, _ := FromJudgeTokens(numbers, content.String(), tc.toks, abi.ScoreSpec{Min: tc.lo, Max: tc.hi}, nil)
				t.Logf("%s: %s %v %d candidates", numbers, res.Mode, res.Value, len(res.Candidates))
			}
		})
	}
}

// FuzzSameAsReference holds FromJudgeTokens to the weighting it replaced,
// bit for bit, errors word for word.
func FuzzSameAsReference(f *testing.F) {
	f.Add(`{"reason": "7 of 9", "score": 10}`, []byte{28, 2, 1}, "1|9|8|0|}|5| 1|10|1|9", []byte{16, 40, 80, 7}, int8(0), int8(10), int8(10), true, true)
	f.Add(`{"score": 7.0}`, []byte{10, 1, 1, 1}, "7|8|seven|½|٧| 7|7|8", []byte{10, 50, 100, 200, 255, 254}, int8(1), int8(10), int8(7), false, false)
	f.Add(`{"score": -3}`, []byte{10, 1, 1}, "-|3|2|-2|1", []byte{20, 30, 253}, int8(-5), int8(5), int8(-3), false, true)
	f.Add(`{"score": 12}`, []byte{10, 1, 1}, strings.Repeat("1|2|3|4|5|6|7|8|9|0|11|12|13|14|15|16|17|18|19|20|", 3), []byte{1, 2, 3, 4, 5}, int8(0), int8(100), int8(12), false, false)
	f.Fuzz(func(t *testing.T, text string, cuts []byte, alts string, probs []byte, lo, hi, rawv int8, useRaw, whole bool) {
		if len(cuts) > 64 || len(text) > 4096 || len(alts) > 4096 {
			return
		}
		toks := fuzzTokens(text, cuts, alts, probs)
		var raw *int
		if useRaw {
			v := int(rawv)
			raw = &v
		}
		numbers := NumbersDigits
		if whole {
			numbers = NumbersWhole
		}
		checkSameAsReference(t, numbers, text, toks, abi.ScoreSpec{Min: int(lo), Max: int(hi)}, raw)
	})
}

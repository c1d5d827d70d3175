package score

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/agentanvil/anvil/abi"
)

// MinProbability is the probability under which an alternative is ignored
// (DeepEval's threshold). The comparison is made on log-probabilities:
// an alternative is kept when logprob >= ln(MinProbability).
const MinProbability = 0.01

var minLogprob = math.Log(MinProbability)

// tally counts the alternatives that were dropped, by reason, to explain a
// fallback to the raw score.
type tally struct {
	below, invalid, notInt, outside, ambiguous int
}

func (t tally) String(lo, hi int) string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(t.below, "below 1%")
	add(t.invalid, "with an invalid logprob")
	add(t.notInt, "not a decimal integer")
	add(t.outside, fmt.Sprintf("outside [%d,%d]", lo, hi))
	add(t.ambiguous, "ambiguous (could begin a longer score)")
	return strings.Join(parts, ", ")
}

// weigher expands the judge's probability tree along the path it actually
// took through the score's tokens (see the package documentation).
type weigher struct {
	tokens []abi.TokenLogprob
	pos    int    // index of the token holding the score's first digit
	digits string // the score's digits as written (no sign, no ".0")
	head   string // the digits the token at pos contributes
	onPath bool   // the token at pos ends where its digits end, so the next token continues the path
	lo, hi int
	merges bool // the judge's tokenizer writes multi-digit numbers as one token (NumbersWhole)
	// mass[:n], then more, is the probability credited to each value, in
	// the order the values were first credited. A reply credits a handful
	// of values: a list searched in full costs less than a map, and in an
	// array it allocates nothing.
	mass [16]credit
	n    int
	more []credit
	t    tally
}

type credit struct {
	value int
	p     float64
}

// maxScannedAlternatives is how many alternatives alternatives dedupes by
// comparing each with those before it; longer lists (providers cap theirs
// at 20) use a set.
const maxScannedAlternatives = 32

// alternatives yields a token's top alternatives, each text once (the
// first listing wins), then the generated token itself when the provider
// did not list it.
func alternatives(tok abi.TokenLogprob) iter.Seq[abi.TopLogprob] {
	return func(yield func(abi.TopLogprob) bool) {
		if len(tok.Top) > maxScannedAlternatives {
			seen := make(map[string]bool, len(tok.Top)+1)
			for _, a := range tok.Top {
				if !seen[a.Token] {
					seen[a.Token] = true
					if !yield(a) {
						return
					}
				}
			}
			if !seen[tok.Token] {
				yield(abi.TopLogprob{Token: tok.Token, Logprob: tok.Logprob})
			}
			return
		}
		listed := false
		for k, a := range tok.Top {
			if listedIn(tok.Top[:k], a.Token) {
				continue
			}
			listed = listed || a.Token == tok.Token
			if !yield(a) {
				return
			}
		}
		if !listed {
			yield(abi.TopLogprob{Token: tok.Token, Logprob: tok.Logprob})
		}
	}
}

func listedIn(top []abi.TopLogprob, token string) bool {
	for _, a := range top {
		if a.Token == token {
			return true
		}
	}
	return false
}

// prob converts a logprob to a probability, or tallies why it is unusable.
func (w *weigher) prob(lp float64) (float64, bool) {
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

func trimAlt(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '\'' || r == '`' }

// parseFirst reads an alternative at the score's first position: after
// trimming whitespace and quotes it must be an optional '-' and ASCII digits.
func parseFirst(s string) (neg bool, digits string, ok bool) {
	t := strings.TrimFunc(s, trimAlt)
	if strings.HasPrefix(t, "-") {
		neg, t = true, t[1:]
	}
	if t == "" || strings.TrimLeft(t, "0123456789") != "" {
		return false, "", false
	}
	return neg, t, true
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i]
}

// extendable reports whether digits (with the sign neg) is a proper prefix
// of the decimal form of some integer in [lo,hi]: "1" on a 0–10 scale (10).
func (w *weigher) extendable(neg bool, digits string) bool {
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
func (w *weigher) add(neg bool, digits string, p float64) {
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
	for i := range w.mass[:w.n] {
		if w.mass[i].value == v {
			w.mass[i].p += p
			return
		}
	}
	for i := range w.more {
		if w.more[i].value == v {
			w.more[i].p += p
			return
		}
	}
	if w.n < len(w.mass) {
		w.mass[w.n] = credit{value: v, p: p}
		w.n++
		return
	}
	w.more = append(w.more, credit{value: v, p: p})
}

// offPath credits an alternative that left the actual path: it stands for
// the number it completes, unless it is pure digits that could still go on
// to a longer in-range score and the tokenizer splits numbers into digits.
func (w *weigher) offPath(neg bool, digits string, pure bool, p float64) {
	if pure && !w.merges && w.extendable(neg, digits) {
		w.t.ambiguous++
		return
	}
	w.add(neg, digits, p)
}

// first weighs the alternatives at the score's first token.
func (w *weigher) first(litNeg, signOutside bool) {
	tok := w.tokens[w.pos]
	for a := range alternatives(tok) {
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
func (w *weigher) expand(k int, prefix string, neg bool, p float64) {
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
	for a := range alternatives(w.tokens[j]) {
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
func weigh(tokens []abi.TokenLogprob, text string, l literal, lo, hi, raw int, wholeNumbers bool) abi.ScoreResult {
	pos, end := owner(tokens, l.ds)
	tok := tokens[pos]
	if len(tok.Top) == 0 {
		return rawResult(raw, fmt.Sprintf("score token %q has no top alternatives", tok.Token))
	}
	w := &weigher{
		tokens: tokens,
		pos:    pos,
		digits: text[l.ds:l.de],
		head:   text[l.ds:min(l.de, end)],
		onPath: end <= l.de,
		lo:     lo,
		hi:     hi,
		merges: wholeNumbers,
	}
	w.first(l.neg, l.neg && ownerOf(tokens, l.start) < pos)
	if w.n == 0 {
		return rawResult(raw, fmt.Sprintf("no alternative at score token %q survived: %s", tok.Token, w.t.String(lo, hi)))
	}
	res := abi.ScoreResult{Raw: raw, Mode: abi.ScoreWeighted, Candidates: make([]abi.ScoreCandidate, 0, w.n+len(w.more))}
	var sum, weighted float64
	// Each value once, as the map this replaced held them; the sums below
	// run in ascending order of value, as they did.
	for _, c := range w.mass[:w.n] {
		res.Candidates = append(res.Candidates, abi.ScoreCandidate{Value: c.value, Probability: c.p})
	}
	for _, c := range w.more {
		res.Candidates = append(res.Candidates, abi.ScoreCandidate{Value: c.value, Probability: c.p})
	}
	slices.SortFunc(res.Candidates, func(a, b abi.ScoreCandidate) int { return a.Value - b.Value })
	for _, c := range res.Candidates {
		sum += c.Probability
		weighted += float64(c.Value) * c.Probability
	}
	res.Value = min(max(weighted/sum, float64(lo)), float64(hi))
	return res
}

// owner returns the token holding byte b of the tokens' text, and the
// offset where that token ends.
func owner(tokens []abi.TokenLogprob, b int) (pos, end int) {
	for i, t := range tokens {
		end += len(t.Token)
		if end > b {
			return i, end
		}
	}
	return len(tokens), end
}

func ownerOf(tokens []abi.TokenLogprob, b int) int {
	pos, _ := owner(tokens, b)
	return pos
}

func rawResult(raw int, cause string) abi.ScoreResult {
	return abi.ScoreResult{Raw: raw, Value: float64(raw), Mode: abi.ScoreRaw, Cause: cause}
}

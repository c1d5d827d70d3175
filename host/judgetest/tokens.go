package judgetest

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/agentanvil/anvil/abi"
)

// Tokens splits text naively into tokens of probability 1, each its own
// only alternative: runs of letters (with one leading space, as BPE
// tokenizers do), runs of digits, and single other characters. The tokens
// concatenate back to text.
func Tokens(text string) []abi.TokenLogprob {
	var out []abi.TokenLogprob
	var cur strings.Builder
	class := 0 // 0 none, 1 letters, 2 digits
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, certain(cur.String()))
			cur.Reset()
		}
		class = 0
	}
	runes := []rune(text)
	for i, r := range runes {
		switch {
		case unicode.IsLetter(r):
			if class != 1 {
				flush()
				class = 1
			}
			cur.WriteRune(r)
		case unicode.IsDigit(r):
			if class != 2 {
				flush()
				class = 2
			}
			cur.WriteRune(r)
		case r == ' ' && i+1 < len(runes) && unicode.IsLetter(runes[i+1]):
			flush()
			cur.WriteRune(r)
			class = 1
		default:
			flush()
			out = append(out, certain(string(r)))
		}
	}
	flush()
	return out
}

func certain(tok string) abi.TokenLogprob {
	return abi.TokenLogprob{Token: tok, Logprob: 0, Top: []abi.TopLogprob{{Token: tok, Logprob: 0}}}
}

// ScoreTokens returns the tokens of prefix (split naively) followed by score
// as one token whose alternatives are given as probabilities (token →
// probability). The score's own probability is alternatives[score] when
// present, else whatever mass the others leave. Alternatives are listed
// most likely first, as servers do.
//
//	append(ScoreTokens(`{"reason": "ok", "score": `, "7", map[string]float64{"7": .6, "8": .3, "6": .1}), Tokens("}")...)
func ScoreTokens(prefix, score string, alternatives map[string]float64) []abi.TokenLogprob {
	return SplitScoreTokens(prefix, []string{score}, alternatives)
}

// SplitScoreTokens is ScoreTokens for a score generated as several tokens
// ("1", "0" for 10): the alternatives are at the first piece, the other
// pieces are certain.
func SplitScoreTokens(prefix string, pieces []string, alternatives map[string]float64) []abi.TokenLogprob {
	if len(pieces) == 0 {
		panic("judgetest.SplitScoreTokens: no score pieces")
	}
	out := Tokens(prefix)
	out = append(out, weighted(pieces[0], alternatives))
	for _, p := range pieces[1:] {
		out = append(out, certain(p))
	}
	return out
}

func weighted(tok string, alternatives map[string]float64) abi.TokenLogprob {
	probs := make(map[string]float64, len(alternatives)+1)
	rest := 1.0
	for k, p := range alternatives {
		if p <= 0 || p > 1 {
			panic(fmt.Sprintf("judgetest: probability of %q is %g, want (0,1]", k, p))
		}
		probs[k] = p
		if k != tok {
			rest -= p
		}
	}
	if _, ok := probs[tok]; !ok {
		probs[tok] = max(rest, 1e-6)
	}
	t := abi.TokenLogprob{Token: tok, Logprob: math.Log(probs[tok])}
	for k, p := range probs {
		t.Top = append(t.Top, abi.TopLogprob{Token: k, Logprob: math.Log(p)})
	}
	sort.Slice(t.Top, func(a, b int) bool {
		if t.Top[a].Logprob != t.Top[b].Logprob {
			return t.Top[a].Logprob > t.Top[b].Logprob
		}
		return t.Top[a].Token < t.Top[b].Token
	})
	return t
}

// JSONScoreReply is a reply `{"reason": "<reason>", "score": <score>}`
// with logprobs: the score is one token with the given alternatives.
func JSONScoreReply(reason, score string, alternatives map[string]float64) Reply {
	tokens := ScoreTokens(fmt.Sprintf(`{"reason": %q, "score": `, reason), score, alternatives)
	tokens = append(tokens, Tokens("}")...)
	return Reply{Content: joinTokens(tokens), Logprobs: tokens}
}

func joinTokens(tokens []abi.TokenLogprob) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString(t.Token)
	}
	return b.String()
}

package score

import (
	"fmt"
	"math"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// benchTokens is a G-Eval scoring reply as a judge with logprobs returns
// it: a reason, then the score, every token with n top alternatives (the
// score's own plausible, the rest improbable and not numeric).
func benchTokens(n int) []abi.TokenLogprob {
	words := []string{`{"`, `reason`, `":`, ` "`, `The`, ` actual`, ` output`, ` addresses`, ` the`, ` input`, ` and`, ` 7`, ` of`, ` 9`, ` facts`, `.`, `",`, ` "`, `score`, `":`, ` `, `8`, `}`}
	toks := make([]abi.TokenLogprob, len(words))
	for i, w := range words {
		t := abi.TokenLogprob{Token: w, Logprob: -0.01}
		if w == `8` {
			t.Logprob = math.Log(0.7)
			t.Top = []abi.TopLogprob{{Token: "8", Logprob: math.Log(0.7)}, {Token: "9", Logprob: math.Log(0.2)}, {Token: "7", Logprob: math.Log(0.1)}}
		} else {
			t.Top = []abi.TopLogprob{{Token: w, Logprob: -0.01}}
		}
		for k := 0; len(t.Top) < n; k++ {
			t.Top = append(t.Top, abi.TopLogprob{Token: fmt.Sprintf(" alt%c%c", 'a'+k%26, 'a'+k/26), Logprob: math.Log(1e-4) - 0.25*float64(k)})
		}
		toks[i] = t
	}
	return toks
}

func BenchmarkFromJudgeTokens(b *testing.B) {
	spec := abi.ScoreSpec{Min: 0, Max: 10}
	for _, n := range []int{3, 20} {
		toks := benchTokens(n)
		var content string
		for _, t := range toks {
			content += t.Token
		}
		raw := 8
		for _, numbers := range []NumberTokens{NumbersWhole, NumbersDigits} {
			b.Run(fmt.Sprintf("%s_%dalts", numbers, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := FromJudgeTokens(numbers, content, toks, spec, &raw)
					if err != nil || res.Mode != abi.ScoreWeighted {
						b.Fatal(res, err)
					}
				}
			})
		}
	}
}

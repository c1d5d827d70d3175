package score

import (
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// fuzzTokens builds tokens from fuzz inputs: text is cut at the offsets in
// cuts; alts ("|"-separated) are dealt round-robin as top alternatives;
// each byte of probs gives a logprob (0 → 0, 255 → NaN, 254 → +0.5 (an
// invalid positive logprob), 253 → -Inf, else -b/32).
func fuzzTokens(text string, cuts []byte, alts string, probs []byte) []abi.TokenLogprob {
	var toks []abi.TokenLogprob
	for _, c := range cuts {
		if len(text) == 0 {
			break
		}
		n := int(c)%len(text) + 1
		toks = append(toks, abi.TokenLogprob{Token: text[:n]})
		text = text[n:]
	}
	if text != "" {
		toks = append(toks, abi.TokenLogprob{Token: text})
	}
	if len(toks) == 0 {
		return nil
	}
	k := 0
	lp := func() float64 {
		if len(probs) == 0 {
			return 0
		}
		b := probs[k%len(probs)]
		k++
		switch b {
		case 255:
			return math.NaN()
		case 254:
			return 0.5
		case 253:
			return math.Inf(-1)
		}
		return -float64(b) / 32
	}
	for i := range toks {
		toks[i].Logprob = lp()
	}
	if alts != "" {
		for i, a := range strings.Split(alts, "|") {
			t := &toks[i%len(toks)]
			t.Top = append(t.Top, abi.TopLogprob{Token: a, Logprob: lp()})
		}
	}
	return toks
}

func FuzzFromTokens(f *testing.F) {
	f.Add(`{"reason": "7 of 9", "score": 10}`, []byte{28, 2, 1}, "1|9|8|0|}|5| 1|10", []byte{16, 40, 80, 7}, int8(0), int8(10), int8(10), true)
	f.Add(`{"score": 7.0}`, []byte{10, 1, 1, 1}, "7|8|seven|½|٧| 7", []byte{10, 50, 100, 200, 255, 254}, int8(1), int8(10), int8(7), false)
	f.Add("Score: 7/10. Step 2 missed.", []byte{5, 1, 1, 1, 1, 2}, "7|8|6|10", []byte{3, 4, 5}, int8(1), int8(10), int8(7), true)
	f.Add(`{"score": -3}`, []byte{10, 1, 1}, "-|3|2|-2|1", []byte{20, 30, 253}, int8(-5), int8(5), int8(-3), false)
	f.Add("1", []byte{}, "1|0|}", []byte{1, 2, 3}, int8(0), int8(100), int8(1), false)
	f.Add("", []byte{}, "", []byte{}, int8(1), int8(1), int8(0), false)
	f.Fuzz(func(t *testing.T, text string, cuts []byte, alts string, probs []byte, lo, hi, rawv int8, useRaw bool) {
		if len(cuts) > 64 || len(text) > 4096 || len(alts) > 4096 {
			return
		}
		toks := fuzzTokens(text, cuts, alts, probs)
		spec := abi.ScoreSpec{Min: int(lo), Max: int(hi)}
		var raw *int
		if useRaw {
			v := int(rawv)
			raw = &v
		}
		res, err := FromTokens(text, toks, spec, raw)
		if err != nil {
			if res.Mode != "" {
				t.Fatalf("error %v with a result %+v", err, res)
			}
			return
		}
		if hi <= lo {
			t.Fatalf("no error for range [%d,%d]", lo, hi)
		}
		if res.Raw < spec.Min || res.Raw > spec.Max {
			t.Fatalf("raw %d outside [%d,%d]", res.Raw, spec.Min, spec.Max)
		}
		if raw != nil && res.Raw != *raw {
			t.Fatalf("raw %d, want %d", res.Raw, *raw)
		}
		switch res.Mode {
		case abi.ScoreWeighted:
			if math.IsNaN(res.Value) || res.Value < float64(spec.Min) || res.Value > float64(spec.Max) {
				t.Fatalf("weighted value %v outside [%d,%d]", res.Value, spec.Min, spec.Max)
			}
			if res.Cause != "" || len(res.Candidates) == 0 {
				t.Fatalf("weighted result %+v", res)
			}
			for i, c := range res.Candidates {
				if c.Value < spec.Min || c.Value > spec.Max || !(c.Probability > 0) || math.IsInf(c.Probability, 0) {
					t.Fatalf("bad candidate %+v", c)
				}
				if i > 0 && c.Value <= res.Candidates[i-1].Value {
					t.Fatalf("candidates not strictly ascending: %+v", res.Candidates)
				}
			}
		case abi.ScoreRaw:
			if res.Value != float64(res.Raw) || res.Cause == "" || len(res.Candidates) != 0 {
				t.Fatalf("raw result %+v", res)
			}
		default:
			t.Fatalf("mode %q", res.Mode)
		}
	})
}

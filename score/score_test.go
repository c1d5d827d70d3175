package score

import (
	"cmp"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// alt is one top alternative with probability p.
func alt(token string, p float64) abi.TopLogprob {
	return abi.TopLogprob{Token: token, Logprob: math.Log(p)}
}

// tk is a generated token with probability p and its alternatives.
func tk(token string, p float64, alts ...abi.TopLogprob) abi.TokenLogprob {
	return abi.TokenLogprob{Token: token, Logprob: math.Log(p), Top: alts}
}

// plain is a generated context token with no alternatives.
func plain(token string) abi.TokenLogprob { return abi.TokenLogprob{Token: token} }

func concat(tokens []abi.TokenLogprob) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString(t.Token)
	}
	return b.String()
}

func intp(v int) *int { return &v }

// cand is an expected candidate: value and summed probability.
type cand struct {
	v int
	p float64
}

const eps = 1e-9

func near(a, b float64) bool { return math.Abs(a-b) <= eps }

func spec(lo, hi int) abi.ScoreSpec { return abi.ScoreSpec{Min: lo, Max: hi} }

func TestFromTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string // default: the tokens' text
		tokens  []abi.TokenLogprob
		spec    abi.ScoreSpec
		raw     *int
		numbers NumberTokens // default NumbersDigits
		mode    string
		value   float64
		cands   []cand
		cause   string // substring of Cause
	}{
		{
			name: "single token",
			tokens: []abi.TokenLogprob{
				plain(`{"reason": "ok", "score": `),
				tk("7", .6, alt("7", .6), alt("8", .3), alt("6", .1)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			// 7·.6 + 8·.3 + 6·.1 = 7.2 over a mass of 1
			mode: abi.ScoreWeighted, value: 7.2,
			cands: []cand{{6, .1}, {7, .6}, {8, .3}},
		},
		{
			name: "digit in the reason before the score",
			tokens: []abi.TokenLogprob{
				plain(`{"reason": "`),
				tk("7", .9, alt("7", .9), alt("3", .1)),
				plain(` of nine steps met", "score": `),
				tk("7", .5, alt("7", .5), alt("6", .5)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			// the second 7: (7·.5 + 6·.5)/1 = 6.5; the first would give 6.6
			mode: abi.ScoreWeighted, value: 6.5,
			cands: []cand{{6, .5}, {7, .5}},
		},
		{
			name: "digit in the reason before the score, raw read from the JSON",
			tokens: []abi.TokenLogprob{
				plain(`{"reason": "`),
				tk("7", .9, alt("7", .9), alt("3", .1)),
				plain(` of nine steps met", "score": `),
				tk("7", .5, alt("7", .5), alt("6", .5)),
				plain("}"),
			},
			spec:  spec(1, 10),
			mode:  abi.ScoreWeighted,
			value: 6.5,
			cands: []cand{{6, .5}, {7, .5}},
		},
		{
			name: "score key before a reason repeating the score",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("7", .5, alt("7", .5), alt("6", .5)),
				plain(`, "reason": "`),
				tk("7", .9, alt("7", .9), alt("3", .1)),
				plain(` of nine steps met"}`),
			},
			spec: spec(1, 10), raw: intp(7),
			// the JSON key wins over the later, unlabelled 7
			mode: abi.ScoreWeighted, value: 6.5,
			cands: []cand{{6, .5}, {7, .5}},
		},
		{
			name: "10 as one token",
			tokens: []abi.TokenLogprob{
				plain(`{"reason": "all met", "score": `),
				tk("10", .7, alt("10", .7), alt("9", .2), alt("8", .1)),
				plain("}"),
			},
			spec: spec(0, 10), raw: intp(10),
			// 10·.7 + 9·.2 + 8·.1 = 9.6
			mode: abi.ScoreWeighted, value: 9.6,
			cands: []cand{{8, .1}, {9, .2}, {10, .7}},
		},
		{
			name: "10 as two tokens",
			tokens: []abi.TokenLogprob{
				plain(`{"reason": "all met", "score": `),
				tk("1", .6, alt("1", .6), alt("9", .3), alt("8", .1)),
				tk("0", .8, alt("0", .8), alt("}", .15), alt("5", .05)),
				plain("}"),
			},
			spec: spec(0, 10), raw: intp(10),
			// 10: .6·.8 = .48; 1: .6·.15 = .09; 15 outside; 9: .3; 8: .1
			// (4.8 + .09 + 2.7 + .8)/.97 = 8.39/.97
			mode: abi.ScoreWeighted, value: 8.39 / .97,
			cands: []cand{{1, .09}, {8, .1}, {9, .3}, {10, .48}},
		},
		{
			name: "10 as two tokens with a leading space",
			tokens: []abi.TokenLogprob{
				plain(`Score:`),
				tk(" 1", .5, alt(" 1", .5), alt(" 9", .4), alt("1", .1)),
				tk("0", .9, alt("0", .9), alt(",", .1)),
				plain(", because every step was met."),
			},
			spec: spec(0, 10),
			// " 1" and "1" both follow the path: 10: (.5+.1)·.9 = .54,
			// 1: (.5+.1)·.1 = .06; 9: .4. (5.4 + .06 + 3.6)/1 = 9.06
			mode: abi.ScoreWeighted, value: 9.06,
			cands: []cand{{1, .06}, {9, .4}, {10, .54}},
		},
		{
			name: "1 split by the next token",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("1", .7, alt("1", .7), alt("2", .3)),
				tk("}", .8, alt("}", .8), alt("0", .2)),
			},
			spec: spec(0, 10),
			// 1: .7·.8 = .56; 10: .7·.2 = .14; 2: .3 → .56 + 1.4 + .6 = 2.56
			mode: abi.ScoreWeighted, value: 2.56,
			cands: []cand{{1, .56}, {2, .3}, {10, .14}},
		},
		{
			name: "1 at the very end of the reply",
			tokens: []abi.TokenLogprob{
				plain("Score: "),
				tk("1", .7, alt("1", .7), alt("2", .3)),
			},
			spec: spec(0, 10),
			// nothing follows: 1 keeps .7 → .7 + .6 = 1.3
			mode: abi.ScoreWeighted, value: 1.3,
			cands: []cand{{1, .7}, {2, .3}},
		},
		{
			name: "ambiguous 1 dropped when the tokenizer splits digits",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("9", .6, alt("9", .6), alt("1", .3), alt("8", .1)),
				plain("}"),
			},
			spec: spec(0, 10),
			// "1" may begin 10: dropped. (5.4 + .8)/.7
			mode: abi.ScoreWeighted, value: 6.2 / .7,
			cands: []cand{{8, .1}, {9, .6}},
		},
		{
			name: "1 means 1 when the tokenizer writes 10 as one token",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("9", .6, alt("9", .6), alt("1", .3), alt("8", .1)),
				plain("}"),
			},
			spec: spec(0, 10), numbers: NumbersWhole,
			// 5.4 + .3 + .8 = 6.5 over 1
			mode: abi.ScoreWeighted, value: 6.5,
			cands: []cand{{1, .3}, {8, .1}, {9, .6}},
		},
		{
			name: "a listed 10 does not make a digit tokenizer whole",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("9", .6, alt("9", .6), alt("1", .3), alt("8", .095), alt("10", .005)),
				plain("}"),
			},
			spec: spec(0, 10),
			// "1" dropped; "10" below 1%: (5.4 + .76)/.695
			mode: abi.ScoreWeighted, value: 6.16 / .695,
			cands: []cand{{8, .095}, {9, .6}},
		},
		{
			name: "candidates under 1% dropped, exactly 1% kept",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("7", .89, alt("7", .89), alt("8", .1), alt("2", .01), alt("3", .0099)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			// 6.23 + .8 + .02 = 7.05 over .89 + .1 + .01 = 1
			mode: abi.ScoreWeighted, value: 7.05,
			cands: []cand{{2, .01}, {7, .89}, {8, .1}},
		},
		{
			name: "non-decimal candidates dropped",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("7", .4, alt("7", .4), alt("8", .1), alt("seven", .1), alt("7a", .1),
					alt("-", .1), alt("½", .1), alt("٧", .1)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			// (2.8 + .8)/.5 = 7.2
			mode: abi.ScoreWeighted, value: 7.2,
			cands: []cand{{7, .4}, {8, .1}},
		},
		{
			name: "out-of-range candidates dropped",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("7", .5, alt("7", .5), alt("0", .2), alt("11", .1), alt("100", .1), alt("8", .1)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			// (3.5 + .8)/.6
			mode: abi.ScoreWeighted, value: 4.3 / .6,
			cands: []cand{{7, .5}, {8, .1}},
		},
		{
			name: "duplicates summed",
			tokens: []abi.TokenLogprob{
				plain(`{"score":`),
				tk(" 7", .3, alt(" 7", .3), alt("7", .2), alt(`"7`, .1), alt(" 8", .2), alt("8", .2)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			// 7: .3+.2+.1 = .6; 8: .4 → 4.2 + 3.2 = 7.4
			mode: abi.ScoreWeighted, value: 7.4,
			cands: []cand{{7, .6}, {8, .4}},
		},
		{
			name: "generated token missing from its alternatives",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("7", .1, alt("8", .6), alt("6", .3)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			// 4.8 + 1.8 + .7 = 7.3
			mode: abi.ScoreWeighted, value: 7.3,
			cands: []cand{{6, .3}, {7, .1}, {8, .6}},
		},
		{
			name: "7.0",
			tokens: []abi.TokenLogprob{
				plain(`{"reason": "fine", "score": `),
				tk("7", .7, alt("7", .7), alt("8", .3)),
				plain("."), plain("0"), plain("}"),
			},
			spec: spec(1, 10),
			// raw 7 from the JSON 7.0; 4.9 + 2.4 = 7.3
			mode: abi.ScoreWeighted, value: 7.3,
			cands: []cand{{7, .7}, {8, .3}},
		},
		{
			name: "1.0 on a 0-10 scale: the '.' position splits 1 from 10",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("1", .8, alt("1", .8), alt("2", .2)),
				tk(".", .75, alt(".", .75), alt("0", .25)),
				plain("0"), plain("}"),
			},
			spec: spec(0, 10), raw: intp(1),
			// 1: .8·.75 = .6; 10: .8·.25 = .2; 2: .2 → .6 + 2 + .4 = 3
			mode: abi.ScoreWeighted, value: 3,
			cands: []cand{{1, .6}, {2, .2}, {10, .2}},
		},
		{
			name: "score at the very end with trailing braces",
			tokens: []abi.TokenLogprob{
				plain(`{"reason": "fine", "score": `),
				tk("8", .5, alt("8", .5), alt("9", .5)),
				plain("}"), plain("\n"), plain("}"),
			},
			spec:  spec(1, 10),
			mode:  abi.ScoreWeighted,
			value: 8.5,
			cands: []cand{{8, .5}, {9, .5}},
		},
		{
			name: "score as a JSON string",
			tokens: []abi.TokenLogprob{
				plain(`{"score": "`),
				tk("4", .5, alt("4", .5), alt("5", .25), alt(`5"`, .25)),
				plain(`"}`),
			},
			spec: spec(1, 5),
			// `5"` trims to 5: 2 + 1.25 + 1.25 = 4.5
			mode: abi.ScoreWeighted, value: 4.5,
			cands: []cand{{4, .5}, {5, .5}},
		},
		{
			name: "prose with a fraction",
			tokens: []abi.TokenLogprob{
				plain("Score"), plain(":"), plain(" "),
				tk("7", .6, alt("7", .6), alt("8", .4)),
				plain("/"), plain("10"), plain(". Step "), plain("2"), plain(" was missed."),
			},
			spec: spec(1, 10),
			// the labelled 7, not the denominator 10 nor the later 2
			mode: abi.ScoreWeighted, value: 7.4,
			cands: []cand{{7, .6}, {8, .4}},
		},
		{
			name: "negative score, sign in its own token",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `), plain("-"),
				tk("3", .5, alt("3", .5), alt("2", .5)),
				plain("}"),
			},
			spec: spec(-5, 5),
			// -3·.5 + -2·.5 = -2.5
			mode: abi.ScoreWeighted, value: -2.5,
			cands: []cand{{-3, .5}, {-2, .5}},
		},
		{
			name: "negative score, sign in the score token",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("-3", .5, alt("-3", .5), alt("-2", .3), alt("1", .2)),
				plain("}"),
			},
			spec: spec(-5, 5),
			// -1.5 - .6 + .2 = -1.9
			mode: abi.ScoreWeighted, value: -1.9,
			cands: []cand{{-3, .5}, {-2, .3}, {1, .2}},
		},
		{
			name:    "no logprobs",
			content: `{"score": 7, "reason": "step 2 missed"}`,
			spec:    spec(1, 10),
			mode:    abi.ScoreRaw, value: 7,
			cause: "no logprobs returned",
		},
		{
			name: "score token has no top alternatives",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `), tk("7", .9), plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			mode: abi.ScoreRaw, value: 7,
			cause: `score token "7" has no top alternatives`,
		},
		{
			name: "everything filtered out",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("7", .005, alt("seven", .6), alt("7", .005), alt("12", .3), alt("½", .095)),
				plain("}"),
			},
			spec: spec(1, 10), raw: intp(7),
			mode: abi.ScoreRaw, value: 7,
			cause: `no alternative at score token "7" survived: 1 below 1%, 2 not a decimal integer, 1 outside [1,10]`,
		},
		{
			name: "everything filtered out past the first position",
			tokens: []abi.TokenLogprob{
				plain(`{"score": `),
				tk("1", .9, alt("1", .9), alt("one", .1)),
				tk("0", .005, alt("5", .99), alt("0", .005)),
				plain("}"),
			},
			spec: spec(0, 10), raw: intp(10),
			mode: abi.ScoreRaw, value: 10,
			cause: `no alternative at score token "1" survived: 1 below 1%, 1 not a decimal integer, 1 outside [0,10]`,
		},
		{
			name:   "raw absent from the tokens",
			tokens: []abi.TokenLogprob{plain(`{"score": `), tk("8", .5, alt("8", .5), alt("9", .5)), plain("}")},
			spec:   spec(1, 10), raw: intp(7),
			mode: abi.ScoreRaw, value: 7,
			cause: "score 7 not found in the generated tokens",
		},
		{
			name:    "tokens that do not spell the content",
			content: `{"score": 6}`,
			tokens:  []abi.TokenLogprob{plain(`{"score": `), tk("8", .5, alt("8", .5), alt("9", .5)), plain("}")},
			spec:    spec(1, 10),
			mode:    abi.ScoreRaw, value: 6,
			cause: "score 6 not found in the generated tokens",
		},
		{
			name: "custom field",
			tokens: []abi.TokenLogprob{
				plain(`{"rating": `), tk("3", .5, alt("3", .5), alt("4", .5)),
				plain(`, "score_note": "4"}`),
			},
			spec: abi.ScoreSpec{Min: 1, Max: 5, Field: "rating"},
			mode: abi.ScoreWeighted, value: 3.5,
			cands: []cand{{3, .5}, {4, .5}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content := tc.content
			if content == "" {
				content = concat(tc.tokens)
			}
			numbers := cmp.Or(tc.numbers, NumbersDigits)
			got, err := FromJudgeTokens(numbers, content, tc.tokens, tc.spec, tc.raw)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got.Mode != tc.mode || !near(got.Value, tc.value) {
				t.Errorf("mode %q value %v, want %q %v (cause %q)", got.Mode, got.Value, tc.mode, tc.value, got.Cause)
			}
			if want := int(math.Round(tc.value)); tc.mode == abi.ScoreRaw && got.Raw != want {
				t.Errorf("raw %d, want %d", got.Raw, want)
			}
			if tc.raw != nil && got.Raw != *tc.raw {
				t.Errorf("raw %d, want %d", got.Raw, *tc.raw)
			}
			if tc.cause == "" && got.Cause != "" || !strings.Contains(got.Cause, tc.cause) {
				t.Errorf("cause %q, want %q", got.Cause, tc.cause)
			}
			if len(got.Candidates) != len(tc.cands) {
				t.Fatalf("candidates %v, want %v", got.Candidates, tc.cands)
			}
			for i, c := range got.Candidates {
				if c.Value != tc.cands[i].v || !near(c.Probability, tc.cands[i].p) {
					t.Errorf("candidates %v, want %v", got.Candidates, tc.cands)
					break
				}
			}
		})
	}
}

func TestFromTokensRawScores(t *testing.T) {
	t.Parallel()
	// Raw is the integer written, whatever the weighting.
	toks := []abi.TokenLogprob{plain(`{"score": `), tk("10", .7, alt("10", .7), alt("9", .3)), plain("}")}
	got, err := FromTokens(concat(toks), toks, spec(0, 10), nil)
	if err != nil || got.Raw != 10 || !near(got.Value, 9.7) {
		t.Fatalf("got %+v, %v; want raw 10, value 9.7", got, err)
	}
}

func TestFromTokensErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		spec    abi.ScoreSpec
		raw     *int
		is      error
		msg     string
	}{
		{"raw above range", `{"score": 11}`, spec(1, 10), intp(11), ErrNoScore, "score 11 is outside [1,10]"},
		{"raw below range", `{"score": 0}`, spec(1, 10), intp(0), ErrNoScore, "score 0 is outside [1,10]"},
		{"JSON field out of range", `{"score": 15, "reason": "step 2"}`, spec(1, 10), nil, ErrNoScore, `score field "score" is 15, outside [1,10]`},
		{"JSON field not an integer", `{"score": 7.5}`, spec(1, 10), nil, ErrNoScore, `score field "score" is 7.5, not an integer`},
		{"JSON field null", `{"score": null}`, spec(1, 10), nil, ErrNoScore, `score field "score" is null, not an integer`},
		{"no digits", "I cannot rate this.", spec(1, 10), nil, ErrNoScore, `no number in the reply "I cannot rate this."`},
		{"empty reply", "  ", spec(1, 10), nil, ErrNoScore, "the reply is empty"},
		{"only numbers outside the range", "Rated 42 in 2024, or 7.5", spec(1, 10), nil, ErrNoScore,
			"no integer in [1,10] in the reply; found (last first) 7.5, 2024, 42"},
		{"zero-width range", `{"score": 5}`, spec(5, 5), intp(5), ErrRange, "zero-width score range [5,5]"},
		{"inverted range", `{"score": 5}`, spec(10, 1), intp(5), ErrRange, "score range [10,1] has max below min"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromTokens(tc.content, nil, tc.spec, tc.raw)
			if err == nil {
				t.Fatalf("no error; got %+v", got)
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q, want %v containing %q", err, tc.is, tc.msg)
			}
		})
	}
}

func TestFindScore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		content string
		lo, hi  int
		want    int
	}{
		{`{"reason": "Step 2 and 3 met", "score": 8}`, 0, 10, 8},
		{`{"score": 8, "reason": "Step 2 and 3 met"}`, 0, 10, 8},
		{"```json\n{\"score\": \"6\", \"reason\": \"x\"}\n```", 0, 10, 6},
		{`{"Score": 6.0}`, 0, 10, 6},
		{"Score: 7/10. Step 2 was missed.", 0, 10, 7},
		{"**Score:** 4\nReason: steps 1, 2 met", 1, 5, 4},
		{"score = 3; see step 5", 1, 5, 3},
		{"I give it 7 out of 10", 0, 10, 7},
		{"gpt4 says 7a, 6.5, 1.2.3 and finally 3", 0, 10, 3},
		{"on a 1-10 scale: 9", 1, 10, 9},
		{"scale -5..5, verdict: -3", -5, 5, -3},
		{"range 1-10 gives 4", -5, 5, 4},
		{"Score 12 is too high; 9", 0, 10, 9},
		{`{"reason": "the old \"score\": 3 was wrong", "x": 1} verdict 5`, 0, 10, 5},
	}
	for _, tc := range tests {
		got, err := findScore(tc.content, "", DefaultField, tc.lo, tc.hi)
		if err != nil || got != tc.want {
			t.Errorf("findScore(%q) = %d, %v; want %d", tc.content, got, err, tc.want)
		}
	}
}

func TestFromSamples(t *testing.T) {
	t.Parallel()
	got, err := FromSamples([]int{7, 8, 9}, spec(1, 10))
	if err != nil {
		t.Fatal(err)
	}
	// mean 8; population variance (1+0+1)/3 → spread √(2/3)
	if got.Mode != abi.ScoreSampled || got.Raw != 7 || !near(got.Value, 8) || !near(got.Spread, math.Sqrt(2.0/3)) {
		t.Errorf("got %+v", got)
	}
	if got.Cause != "mean of 3 samples" {
		t.Errorf("cause %q", got.Cause)
	}
	want := []cand{{7, 1.0 / 3}, {8, 1.0 / 3}, {9, 1.0 / 3}}
	for i, c := range got.Candidates {
		if i >= len(want) || c.Value != want[i].v || !near(c.Probability, want[i].p) {
			t.Errorf("candidates %v, want %v", got.Candidates, want)
		}
	}

	got, err = FromSamples([]int{4, 4, 2, 4}, spec(1, 5))
	// mean 3.5; deviations .5,.5,-1.5,.5 → variance 3/4 → spread √.75
	if err != nil || !near(got.Value, 3.5) || !near(got.Spread, math.Sqrt(.75)) || got.Raw != 4 {
		t.Errorf("got %+v, %v", got, err)
	}

	got, err = FromSamples([]int{5}, spec(1, 5))
	if err != nil || got.Value != 5 || got.Spread != 0 {
		t.Errorf("got %+v, %v", got, err)
	}

	for _, tc := range []struct {
		values []int
		spec   abi.ScoreSpec
		is     error
		msg    string
	}{
		{nil, spec(1, 10), ErrNoScore, "no samples"},
		{[]int{7, 11, 0, 3}, spec(1, 10), ErrNoScore, "samples outside [1,10]: 11, 0"},
		{[]int{3}, spec(3, 3), ErrRange, "zero-width"},
	} {
		_, err := FromSamples(tc.values, tc.spec)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("FromSamples(%v) error %v, want %v containing %q", tc.values, err, tc.is, tc.msg)
		}
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      float64
		lo, hi int
		want   float64
	}{
		{7, 1, 10, 6.0 / 9},
		{5, 0, 10, .5},
		{0, 0, 10, 0},
		{10, 0, 10, 1},
		{0, 1, 10, 0},  // below: clamped
		{11, 1, 10, 1}, // above: clamped
		{-2.5, -5, 5, .25},
		{math.Inf(1), 0, 10, 1},
	} {
		got, err := Normalize(tc.v, tc.lo, tc.hi)
		if err != nil || !near(got, tc.want) {
			t.Errorf("Normalize(%v, %d, %d) = %v, %v; want %v", tc.v, tc.lo, tc.hi, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		v      float64
		lo, hi int
		is     error
		msg    string
	}{
		{3, 5, 5, ErrRange, "zero-width score range [5,5]"},
		{3, 10, 1, ErrRange, "score range [10,1] has max below min"},
		{math.NaN(), 0, 10, ErrNoScore, "NaN"},
	} {
		_, err := Normalize(tc.v, tc.lo, tc.hi)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Normalize(%v, %d, %d) error %v, want %v containing %q", tc.v, tc.lo, tc.hi, err, tc.is, tc.msg)
		}
	}
}

func TestExtendable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lo, hi int
		neg    bool
		digits string
		want   bool
	}{
		{0, 10, false, "1", true},
		{1, 10, false, "1", true},
		{0, 10, false, "2", false},
		{0, 10, false, "10", false},
		{1, 5, false, "1", false},
		{0, 100, false, "10", true},
		{0, 100, false, "5", true},
		{0, 100, false, "100", false},
		{10, 20, false, "2", true},
		{10, 20, false, "3", false},
		{0, 10, false, "0", false},
		{-10, 10, true, "1", true},
		{-5, 5, true, "1", false},
		{-20, -10, true, "1", true},
		{0, math.MaxInt, false, "9", true},
		{0, math.MaxInt, false, "99999999999999999999", false},
	} {
		w := &weigher{lo: tc.lo, hi: tc.hi}
		if got := w.extendable(tc.neg, tc.digits); got != tc.want {
			t.Errorf("[%d,%d] extendable(%v, %q) = %v, want %v", tc.lo, tc.hi, tc.neg, tc.digits, got, tc.want)
		}
	}
}

package score

import (
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// scoreReply is a reply whose reason is reason and whose score 2 (on 0–10)
// has the alternatives "2" .6, "1" .2, "3" .2 — the same score-token
// probabilities whatever the reason says.
func scoreReply(reason string) []abi.TokenLogprob {
	return []abi.TokenLogprob{
		plain(`{"reason": "`), plain(reason), plain(`", "score": `),
		tk("2", .6, alt("2", .6), alt("1", .2), alt("3", .2)),
		plain("}"),
	}
}

// The issue this guards against: a multi-digit number in the reason made
// the lone "1" count, so the same score-token probabilities gave 2.0 or
// 2.25 depending on the reason text. This test fails on that code.
func TestScoreDoesNotDependOnReasonText(t *testing.T) {
	t.Parallel()
	reasons := []string{
		"Mostly wrong.",
		"Wrong in 25 of 30 claims.",
		"Cites section 10 and 12 incorrectly.",
		"1 2 3",
	}
	for _, tc := range []struct {
		name    string
		score   func(content string, tokens []abi.TokenLogprob) (abi.ScoreResult, error)
		want    float64
		wantLen int
	}{
		{"FromTokens", func(c string, tk []abi.TokenLogprob) (abi.ScoreResult, error) {
			return FromTokens(c, tk, spec(0, 10), nil)
		}, (1.2 + .6) / .8, 2},
		{"digits", func(c string, tk []abi.TokenLogprob) (abi.ScoreResult, error) {
			return FromJudgeTokens(NumbersDigits, c, tk, spec(0, 10), nil)
		}, (1.2 + .6) / .8, 2},
		{"whole", func(c string, tk []abi.TokenLogprob) (abi.ScoreResult, error) {
			return FromJudgeTokens(NumbersWhole, c, tk, spec(0, 10), nil)
		}, 1.2 + .2 + .6, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, reason := range reasons {
				toks := scoreReply(reason)
				got, err := tc.score(concat(toks), toks)
				if err != nil {
					t.Fatalf("reason %q: %v", reason, err)
				}
				if got.Mode != abi.ScoreWeighted || !near(got.Value, tc.want) || len(got.Candidates) != tc.wantLen {
					t.Errorf("reason %q: %s %v with %d candidates, want weighted %v with %d",
						reason, got.Mode, got.Value, len(got.Candidates), tc.want, tc.wantLen)
				}
			}
		})
	}
}

func TestFromJudgeTokensRejectsUnknownRule(t *testing.T) {
	t.Parallel()
	toks := scoreReply("ok")
	for _, bad := range []NumberTokens{"", "auto", "Whole"} {
		_, err := FromJudgeTokens(bad, concat(toks), toks, spec(0, 10), nil)
		if err == nil || !strings.Contains(err.Error(), "number tokens") {
			t.Errorf("rule %q: error %v, want one naming number tokens", bad, err)
		}
	}
}

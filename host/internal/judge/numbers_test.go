package judge

import (
	"context"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
	"github.com/agentanvil/anvil/host/judgetest"
)

// The score 2 on 0–10 with the alternatives "2" .6, "1" .2, "3" .2: a
// judge whose tokenizer writes 10 as one token reads the "1" as 1 (2.0); a
// digit-by-digit tokenizer may have begun 10 with it, so it is dropped
// (2.25). Which one is the judge's setting; the reason text — with or
// without multi-digit numbers — never decides it.
func TestJudgeWeighsByItsNumberTokens(t *testing.T) {
	alternatives := map[string]float64{"2": .6, "1": .2, "3": .2}
	const whole, digits = 1.2 + .2 + .6, (1.2 + .6) / .8
	for _, tc := range []struct {
		model   string
		setting judgeconfig.NumberTokens
		want    float64
	}{
		{"gpt-4o-mini", "", whole},
		{"gpt-4o-mini", judgeconfig.NumbersAuto, whole},
		{"gpt-4o-mini", judgeconfig.NumbersDigits, digits},
		{"qwen2.5:7b", "", digits},
		{"some-local-model", judgeconfig.NumbersAuto, digits},
		{"some-local-model", judgeconfig.NumbersWhole, whole},
	} {
		for _, reason := range []string{"Mostly wrong.", "Wrong in 25 of 30 claims; see section 12."} {
			t.Run(tc.model+"/"+string(tc.setting)+"/"+reason, func(t *testing.T) {
				h := newHarness(t, func(c *Config) {
					c.Model, c.NumberTokens = tc.model, tc.setting
					c.SupportsLogprobs, c.SupportsJSONSchema = true, true
				})
				h.srv.SetDefault(judgetest.JSONScoreReply(reason, "2", alternatives))
				req := userRequest("grade")
				req.Score = &abi.ScoreSpec{Min: 0, Max: 10}
				resp := h.judge.Do(context.Background(), req)
				mustOK(t, resp)
				if s := resp.Score; s == nil || s.Mode != abi.ScoreWeighted || !near(s.Value, tc.want) {
					t.Fatalf("Score = %+v; want weighted %v", s, tc.want)
				}
			})
		}
	}
}

// A cached score was weighted by the rule in force when it was recorded:
// a judge whose number_tokens overrides its family must not be answered
// from it, while the family's own rule keeps the keys it always had.
func TestNumberTokensOverrideHasItsOwnCacheKey(t *testing.T) {
	st := openStore(t)
	srv := judgetest.New(t)
	srv.SetDefault(judgetest.JSONScoreReply("ok", "2", map[string]float64{"2": .6, "1": .2, "3": .2}))
	edit := func(setting judgeconfig.NumberTokens) func(*Config) {
		return func(c *Config) {
			c.Model, c.NumberTokens = "some-local-model", setting
			c.SupportsLogprobs, c.SupportsJSONSchema = true, true
		}
	}
	values := map[judgeconfig.NumberTokens]float64{}
	for i, setting := range []judgeconfig.NumberTokens{"", judgeconfig.NumbersDigits, judgeconfig.NumbersWhole, judgeconfig.NumbersAuto} {
		h := newHarnessOn(t, srv, srv.URL(), edit(setting), WithCache(st, CacheReadWrite))
		resp := h.judge.Do(context.Background(), scoredRequest())
		mustOK(t, resp)
		values[setting] = resp.Score.Value
		// "", digits and auto are the family's rule (digits) and share one
		// entry; whole is a second one.
		wantCalls := map[int]int{0: 1, 1: 1, 2: 2, 3: 2}[i]
		if srv.Calls() != wantCalls {
			t.Errorf("after %q: %d upstream calls, want %d", setting, srv.Calls(), wantCalls)
		}
	}
	if values[judgeconfig.NumbersWhole] == values[judgeconfig.NumbersDigits] {
		t.Errorf("whole and digits gave the same score %v", values[judgeconfig.NumbersWhole])
	}
}

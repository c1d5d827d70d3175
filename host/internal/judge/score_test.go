package judge

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestScoreWeightedByLogprobs(t *testing.T) {
	tests := []struct {
		name      string
		reply     judgetest.Reply
		schema    bool
		wantRaw   int
		wantValue float64
	}{
		{"json reply, schema", judgetest.JSONScoreReply("The reason mentions 3 facts", "7", map[string]float64{"7": 0.6, "8": 0.3, "6": 0.1}),
			true, 7, 0.6*7 + 0.3*8 + 0.1*6},
		{"json reply, no schema", judgetest.JSONScoreReply("ok", "4", map[string]float64{"4": 0.5, "5": 0.5}),
			false, 4, 4.5},
		{"ten as two tokens", func() judgetest.Reply {
			toks := judgetest.SplitScoreTokens(`{"reason": "perfect", "score": `, []string{"1", "0"}, map[string]float64{"1": 0.9, "9": 0.1})
			toks = append(toks, judgetest.Tokens("}")...)
			return judgetest.Reply{Logprobs: toks}
		}(), true, 10, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SupportsLogprobs, c.SupportsJSONSchema = true, true })
			h.srv.SetDefault(tc.reply)
			req := userRequest("grade")
			if tc.schema {
				req.Schema = []byte(verdictSchema)
			}
			req.Score = &abi.ScoreSpec{Min: 0, Max: 10}
			resp := h.judge.Do(context.Background(), req)
			mustOK(t, resp)
			sent := h.srv.Requests()[0]
			if !sent.Logprobs || sent.TopLogprobs != DefaultMaxTopLogprobs {
				t.Errorf("score without TopLogprobs sent logprobs=%v top=%d; want true, %d", sent.Logprobs, sent.TopLogprobs, DefaultMaxTopLogprobs)
			}
			if resp.Tokens != nil {
				t.Errorf("tokens returned though the request did not ask for them")
			}
			s := resp.Score
			if s == nil || s.Mode != abi.ScoreWeighted || s.Raw != tc.wantRaw {
				t.Fatalf("Score = %+v; want weighted, raw %d", s, tc.wantRaw)
			}
			if tc.wantValue >= 0 && !near(s.Value, tc.wantValue) {
				t.Errorf("Value = %v; want %v", s.Value, tc.wantValue)
			}
			if tc.wantValue < 0 && (s.Value <= 9 || s.Value > 10) {
				t.Errorf("Value = %v; want between 9 and 10", s.Value)
			}
		})
	}
}

func TestScoreRawWithoutLogprobs(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "3 of 4 points", "score": 6}`})
	req := schemaRequest("grade")
	req.Score = &abi.ScoreSpec{Min: 0, Max: 10}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if s := resp.Score; s == nil || s.Mode != abi.ScoreRaw || s.Raw != 6 || s.Value != 6 || !strings.Contains(s.Cause, "no logprobs") {
		t.Fatalf("Score = %+v; want raw 6 saying the judge has no logprobs", s)
	}
	if h.srv.Requests()[0].Logprobs {
		t.Error("logprobs requested from a judge without them")
	}
}

func TestNoUsableScore(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: "I cannot decide."})
	req := userRequest("grade")
	req.Score = &abi.ScoreSpec{Min: 1, Max: 5}
	resp := h.judge.Do(context.Background(), req)
	wantError(t, resp, abi.CodeJudge, "no usable score", "I cannot decide.")
}

func TestScoreSampling(t *testing.T) {
	samples := []judgetest.Choice{
		{Content: `{"reason": "a", "score": 6}`},
		{Content: `{"reason": "b", "score": 8}`},
		{Content: `{"reason": "c", "score": 7}`},
		{Content: `{"reason": "d", "score": 7}`},
	}
	tests := []struct {
		name      string
		supportsN bool
		wantCalls int
		wantN     int
	}{
		{"one call with n", true, 1, 4},
		{"separate calls", false, 4, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SupportsN = tc.supportsN })
			if tc.supportsN {
				h.srv.SetDefault(judgetest.Reply{Choices: samples})
			} else {
				var seq []judgetest.Reply
				for _, s := range samples {
					seq = append(seq, judgetest.Reply{Content: s.Content})
				}
				h.srv.SetDefault(judgetest.Sequence(seq...))
			}
			req := schemaRequest("grade")
			sampleTemp := 0.9
			req.Score = &abi.ScoreSpec{Min: 0, Max: 10, Samples: 4, SampleTemperature: &sampleTemp}
			resp := h.judge.Do(context.Background(), req)
			mustOK(t, resp)

			if h.srv.Calls() != tc.wantCalls {
				t.Fatalf("calls = %d; want %d", h.srv.Calls(), tc.wantCalls)
			}
			for _, r := range h.srv.Requests() {
				if r.N != tc.wantN || r.Temperature == nil || *r.Temperature != 0.9 || r.Logprobs {
					t.Errorf("sample request n=%d temperature=%v logprobs=%v; want n=%d at 0.9, no logprobs", r.N, r.Temperature, r.Logprobs, tc.wantN)
				}
			}
			s := resp.Score
			if s == nil || s.Mode != abi.ScoreSampled || !near(s.Value, 7) || !strings.Contains(s.Cause, "no logprobs") {
				t.Fatalf("Score = %+v; want sampled mean 7", s)
			}
			if !near(s.Spread, math.Sqrt(0.5)) {
				t.Errorf("Spread = %v; want sqrt(0.5)", s.Spread)
			}
			if resp.Content == "" || resp.JSON == nil {
				t.Errorf("sampled response lacks the first usable reply: %+v", resp)
			}
			if resp.Usage.Attempts != tc.wantCalls {
				t.Errorf("Usage.Attempts = %d; want %d", resp.Usage.Attempts, tc.wantCalls)
			}
		})
	}
}

func TestScoreSamplingTopsUpShortN(t *testing.T) {
	// A server that ignores n returns one choice; the rest come from
	// separate calls.
	h := newHarness(t, func(c *Config) { c.SupportsN = true })
	h.srv.SetDefault(judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		if r.N > 1 {
			return judgetest.Reply{RawBody: `{"id":"x","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Score: 2"},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, ContentType: "application/json"}
		}
		return judgetest.Reply{Content: "Score: 4"}
	}))
	req := userRequest("grade")
	req.Score = &abi.ScoreSpec{Min: 1, Max: 5, Samples: 3}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if h.srv.Calls() != 3 {
		t.Fatalf("calls = %d; want 1 with n plus 2 top-ups", h.srv.Calls())
	}
	if s := resp.Score; s == nil || !near(s.Value, 10.0/3) || s.Raw != 2 {
		t.Fatalf("Score = %+v; want mean of 2,4,4 with raw 2", s)
	}
	if sent := h.srv.Requests()[0]; sent.Temperature == nil || *sent.Temperature != defaultSampleTemperature {
		t.Errorf("sample temperature = %v; want the default %v", sent.Temperature, defaultSampleTemperature)
	}
}

func TestScoreSamplingSurvivesSomeFailures(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = -1 })
	h.srv.SetDefault(judgetest.Sequence(
		judgetest.Reply{Content: "Score: 3"},
		judgetest.Reply{Status: 400, ErrorMessage: "bad sample"},
		judgetest.Reply{Content: "no number here"},
	))
	req := userRequest("grade")
	req.Score = &abi.ScoreSpec{Min: 1, Max: 5, Samples: 3}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if s := resp.Score; s == nil || s.Value != 3 || !strings.Contains(s.Cause, "2 of 3 samples unusable") || !strings.Contains(s.Cause, "1 failed") {
		t.Fatalf("Score = %+v; want 3 from the one usable sample, saying the rest failed", s)
	}
}

func TestScoreSamplingAllFail(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: "no idea"})
	req := userRequest("grade")
	req.Score = &abi.ScoreSpec{Min: 1, Max: 5, Samples: 2}
	resp := h.judge.Do(context.Background(), req)
	wantError(t, resp, abi.CodeJudge, "none of 2 samples carries a usable score")
}

func TestLogprobJudgeIgnoresSamples(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsLogprobs = true })
	h.srv.SetDefault(judgetest.JSONScoreReply("x", "3", map[string]float64{"3": 1}))
	req := userRequest("grade")
	req.Score = &abi.ScoreSpec{Min: 1, Max: 5, Samples: 5}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if h.srv.Calls() != 1 || resp.Score.Mode != abi.ScoreWeighted {
		t.Errorf("calls = %d, mode = %s; want one weighted call", h.srv.Calls(), resp.Score.Mode)
	}
}

package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/agentanvil/anvil/abi"
)

func TestMaxInputTokensConfig(t *testing.T) {
	var c Config
	if err := yaml.Unmarshal([]byte("model: gpt-4o-mini\nbase_url: http://x/v1\nmax_input_tokens: 5000\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c = c.WithDefaults(); c.MaxInputTokens != 5000 {
		t.Errorf("yaml max_input_tokens = %d; want 5000", c.MaxInputTokens)
	}
	var j Config
	if err := json.Unmarshal([]byte(`{"model": "gpt-4o-mini", "max_input_tokens": 7000}`), &j); err != nil || j.MaxInputTokens != 7000 {
		t.Errorf("json max_input_tokens = %d, %v; want 7000", j.MaxInputTokens, err)
	}
	if d := (Config{Model: "gpt-4o-mini"}).WithDefaults(); d.MaxInputTokens != 128_000 {
		t.Errorf("default for gpt-4o-mini = %d; want the family's 128000", d.MaxInputTokens)
	}
	bad := Config{Model: "m", BaseURL: "http://x/v1", MaxInputTokens: -1}.WithDefaults()
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "max_input_tokens") {
		t.Errorf("Validate(-1) = %v; want an error naming max_input_tokens", err)
	}
}

func TestRequestLargerThanMaxInputTokensIsNotSent(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxInputTokens = 1000 })
	req := userRequest(strings.Repeat("lorem ipsum ", 1000)) // 12,000 characters
	resp := h.judge.Do(context.Background(), req)
	wantError(t, resp, abi.CodeRequestTooLarge, "request too large: about 3", "input tokens (estimated), more than max_input_tokens 1000",
		"not sent", "largest part: message 2 (user), 12000 characters")
	if resp.Error.Field != "max_input_tokens" || resp.Error.Retryable {
		t.Errorf("field %q, retryable %v; want max_input_tokens, false", resp.Error.Field, resp.Error.Retryable)
	}
	if h.srv.Calls() != 0 || resp.Usage.Calls != 0 || h.judge.Totals().Calls != 0 {
		t.Errorf("server calls %d, usage %+v; want nothing sent", h.srv.Calls(), resp.Usage)
	}
	// A request that fits goes out.
	mustOK(t, h.judge.Do(context.Background(), userRequest("short")))
}

func TestRequestLargerThanTheTPMBucketIsNeverSent(t *testing.T) {
	// The case: a 1.3M-token request under a 200k tokens/min limit
	// used to wait for a full bucket and then go out whole.
	h := newHarness(t, func(c *Config) { c.TokensPerMinute = 200_000; c.MaxTokens = 500 })
	huge := userRequest(strings.Repeat("word ", 1_040_000)) // 5.2M characters ≈ 1.3M tokens
	resp := h.judge.Do(context.Background(), huge)
	wantError(t, resp, abi.CodeRequestTooLarge, "+ 500 max_tokens), more than the whole tokens_per_minute allowance of 200000",
		"never be paced", "message 2 (user), 5200000 characters")
	if resp.Error.Field != "tokens_per_minute" {
		t.Errorf("field = %q; want tokens_per_minute", resp.Error.Field)
	}
	if h.srv.Calls() != 0 || len(h.clock.Sleeps()) != 0 {
		t.Errorf("server calls %d, waits %v; want neither", h.srv.Calls(), h.clock.Sleeps())
	}
	// Input that fits only without the reply cap is refused too.
	edge := userRequest(strings.Repeat("x", 4*199_800))
	wantError(t, h.judge.Do(context.Background(), edge), abi.CodeRequestTooLarge, "tokens_per_minute")
	if h.srv.Calls() != 0 {
		t.Errorf("server calls %d; want 0", h.srv.Calls())
	}
}

func TestForecast(t *testing.T) {
	sampled := schemaRequest("grade")
	sampled.Score = &abi.ScoreSpec{Min: 0, Max: 10, Samples: 5}
	tests := []struct {
		name           string
		edit           func(*Config)
		req            abi.JudgeRequest
		calls, replies int
	}{
		{"one call", nil, schemaRequest("grade"), 1, 1},
		{"samples without n", nil, sampled, 5, 5},
		{"samples with n", func(c *Config) { c.SupportsN = true }, sampled, 1, 5},
		{"logprobs: no sampling", func(c *Config) { c.SupportsLogprobs = true }, sampled, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.edit)
			f, err := h.judge.Forecast(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			single := tc.req
			single.Score = nil
			f1, _ := h.judge.Forecast(single)
			one := f1.InputTokens
			if one < estimateMessages(tc.req.Messages) || f.Calls != tc.calls || f.Replies != tc.replies || f.InputTokens != tc.calls*one {
				t.Errorf("forecast = %+v; want %d calls, %d replies, %d input tokens", f, tc.calls, tc.replies, tc.calls*one)
			}
			if h.srv.Calls() != 0 || h.judge.Totals() != (Totals{}) {
				t.Errorf("Forecast called or counted: server %d, totals %+v", h.srv.Calls(), h.judge.Totals())
			}
		})
	}
	h := newHarness(t, func(c *Config) { c.MaxInputTokens = 10 })
	if _, err := h.judge.Forecast(userRequest(strings.Repeat("a", 400))); err == nil || err.Code != abi.CodeRequestTooLarge {
		t.Errorf("Forecast of an oversized request = %v; want request_too_large", err)
	}
}

// Forecast leaves the cache key out but refuses what Do refuses for it: a
// request whose key material does not encode (a non-finite float) gets
// Do's error, word for word, and one that encodes is forecast as when the
// key was computed.
func TestForecastWithoutKeyRefusesWhatDoRefuses(t *testing.T) {
	nan, inf, ok := math.NaN(), math.Inf(1), 0.5
	tests := []struct {
		name    string
		edit    func(*abi.JudgeRequest)
		refused bool
	}{
		{"finite", func(r *abi.JudgeRequest) { r.Temperature = &ok }, false},
		{"NaN temperature", func(r *abi.JudgeRequest) { r.Temperature = &nan }, true},
		{"infinite temperature", func(r *abi.JudgeRequest) { r.Temperature = &inf }, true},
		{"NaN sample temperature", func(r *abi.JudgeRequest) {
			r.Score = &abi.ScoreSpec{Min: 0, Max: 10, Samples: 3, SampleTemperature: &nan}
		}, true},
		{"infinite sample temperature, logprobs", func(r *abi.JudgeRequest) {
			r.Score = &abi.ScoreSpec{Min: 0, Max: 10, Samples: 3, SampleTemperature: &inf}
		}, true},
	}
	for _, logprobs := range []bool{false, true} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/logprobs=%v", tc.name, logprobs), func(t *testing.T) {
				h := newHarness(t, func(c *Config) { c.SupportsLogprobs = logprobs })
				req := schemaRequest("grade")
				tc.edit(&req)
				_, ferr := h.judge.Forecast(req)
				_, perr := h.judge.plan(req, 0)
				if (ferr != nil) != tc.refused || !reflect.DeepEqual(ferr, perr) {
					t.Fatalf("Forecast error %v, plan error %v; want refused %v, the same error", ferr, perr, tc.refused)
				}
				if tc.refused {
					return
				}
				keyed, _ := h.judge.plan(req, 0)
				unkeyed, _ := h.judge.resolve(req, 0, false)
				if unkeyed.key != "" || keyed.key == "" {
					t.Fatalf("keys %q (unkeyed) and %q (keyed)", unkeyed.key, keyed.key)
				}
				unkeyed.key = keyed.key
				if !reflect.DeepEqual(unkeyed, keyed) {
					t.Errorf("plans differ beyond the key:\n%+v\n%+v", unkeyed, keyed)
				}
			})
		}
	}
}

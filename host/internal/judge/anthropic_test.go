package judge

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func anthropicHarness(t *testing.T, edit func(*Config), opts ...judgetest.Option) *harness {
	t.Helper()
	srv := judgetest.New(t, append([]judgetest.Option{judgetest.Anthropic(), judgetest.WithAPIKey(testKey)}, opts...)...)
	return newHarnessOn(t, srv, srv.URL(), func(c *Config) {
		c.Provider = "anthropic"
		c.Model = "claude-sonnet-4-5"
		c.APIKeyEnv = "ANTHROPIC_API_KEY"
		if edit != nil {
			edit(c)
		}
	})
}

// The request is what the Messages API takes: the system prompt apart,
// max_tokens always, the schema as a forced tool; the tool's input is the
// structured reply, and usage with cached input is counted.
func TestAnthropicStructuredReply(t *testing.T) {
	h := anthropicHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "fine", "score": 7}`,
		Usage: &judgetest.Usage{PromptTokens: 120, CompletionTokens: 9, CachedTokens: 100}})
	temp := 0.2
	req := abi.JudgeRequest{Messages: userRequest("grade this").Messages, Schema: []byte(verdictSchema), SchemaName: "verdict",
		Temperature: &temp, Score: &abi.ScoreSpec{Min: 0, Max: 10}}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if string(resp.JSON) != `{"reason":"fine","score":7}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if resp.Score == nil || resp.Score.Value != 7 || resp.Score.Mode != abi.ScoreRaw ||
		resp.Score.Cause != "judge has no logprobs (provider anthropic returns none)" {
		t.Errorf("score = %+v", resp.Score)
	}
	r := h.srv.Requests()[0]
	if r.Header.Get("X-Api-Key") != testKey || r.Header.Get("Anthropic-Version") != judgetest.AnthropicVersion || r.Header.Get("Authorization") != "" {
		t.Errorf("headers: x-api-key set %v, anthropic-version %q", r.Header.Get("X-Api-Key") != "", r.Header.Get("Anthropic-Version"))
	}
	if r.ToolChoice != "verdict" || r.MaxTokens != anthropicDefaultMaxTokens || r.Temperature == nil || *r.Temperature != 0.2 {
		t.Errorf("request: tool %q, max_tokens %d, temperature %v", r.ToolChoice, r.MaxTokens, r.Temperature)
	}
	if r.Messages[0].Role != "system" || r.Messages[0].Content != "You are a strict grader." {
		t.Errorf("messages = %+v", r.Messages)
	}
	if strings.Contains(r.LastMessage(), schemaInstruction) {
		t.Error("the schema travelled in the prompt as well as in the tool")
	}
	var body struct {
		Tools []struct {
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Tools) != 1 || body.Tools[0].InputSchema["type"] != "object" ||
		body.Tools[0].InputSchema["required"] == nil || body.Tools[0].InputSchema["additionalProperties"] != false {
		t.Errorf("tools = %+v (%v)", body.Tools, err)
	}
	if resp.Usage.InputTokens != 120 || resp.Usage.OutputTokens != 9 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if tot := h.judge.Totals(); tot.CachedInputTokens != 100 || tot.InputTokens != 120 {
		t.Errorf("totals = %+v", tot)
	}
}

// Scores are sampled (one call per sample: no n) with the cause saying why.
func TestAnthropicSampledScore(t *testing.T) {
	h := anthropicHarness(t, nil)
	h.srv.SetDefault(judgetest.Sequence(
		judgetest.Reply{Content: `{"reason": "a", "score": 6}`},
		judgetest.Reply{Content: `{"reason": "b", "score": 8}`},
		judgetest.Reply{Content: `{"reason": "c", "score": 7}`}))
	req := abi.JudgeRequest{Messages: userRequest("grade").Messages, Schema: []byte(verdictSchema),
		Score: &abi.ScoreSpec{Min: 0, Max: 10, Samples: 3}}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if resp.Score == nil || resp.Score.Mode != abi.ScoreSampled || resp.Score.Value != 7 ||
		!strings.HasPrefix(resp.Score.Cause, "judge has no logprobs (provider anthropic returns none); ") {
		t.Errorf("score = %+v", resp.Score)
	}
	if h.srv.Calls() != 3 || resp.Usage.Calls != 3 {
		t.Errorf("calls %d, usage %+v", h.srv.Calls(), resp.Usage)
	}
	for _, r := range h.srv.Requests() {
		if r.Temperature == nil || *r.Temperature != 1 {
			t.Errorf("sample temperature %v", r.Temperature)
		}
	}
}

// A reply that is not usable is repaired once; max_tokens is truncation;
// a refusal is named.
func TestAnthropicFinishes(t *testing.T) {
	h := anthropicHarness(t, nil)
	h.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Content: "I think it is a 7"}, judgetest.Reply{Content: `{"reason": "r", "score": 7}`}))
	req := abi.JudgeRequest{Messages: userRequest("grade").Messages, Schema: []byte(verdictSchema)}
	mustOK(t, h.judge.Do(context.Background(), req))
	if h.srv.Calls() != 2 || !strings.Contains(h.srv.Requests()[1].LastMessage(), "could not be used") {
		t.Errorf("no repair: %d calls", h.srv.Calls())
	}

	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "r", "score": 7}`, FinishReason: "length"})
	wantError(t, h.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("cut").Messages, MaxTokens: 50}),
		abi.CodeTruncated, "cut off at the token limit", "max_tokens 50")

	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Content: "7", FinishReason: "length"})
	wantError(t, h.judge.Do(context.Background(), userRequest("cut without a cap")), abi.CodeTruncated, "max_tokens 4096")
	if f, err := h.judge.Forecast(userRequest("estimate")); err != nil || f.MaxTokens != anthropicDefaultMaxTokens {
		t.Errorf("Forecast = %+v, %v; want the cap that is sent", f, err)
	}

	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Refusal: "I will not grade this."})
	wantError(t, h.judge.Do(context.Background(), userRequest("refuse")), abi.CodeJudge, "the model refused", "I will not grade this.")
}

// A schema a tool cannot take (its top level is not an object) travels
// in the prompt; consecutive messages of one role are one turn.
func TestAnthropicPromptSchema(t *testing.T) {
	h := anthropicHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: `{"ok": true}`})
	req := abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}},
		Schema: []byte(`{"anyOf": [{"type": "object"}]}`)}
	mustOK(t, h.judge.Do(context.Background(), req))
	r := h.srv.Requests()[0]
	if r.ToolChoice != "" || len(r.Messages) != 1 || !strings.Contains(r.Messages[0].Content, schemaInstruction) ||
		!strings.HasPrefix(r.Messages[0].Content, "ab") {
		t.Errorf("request = %+v", r)
	}
}

// Errors keep the API's words, bounded and redacted; 529 and 429 are
// retried; 401 names the key variable.
func TestAnthropicErrors(t *testing.T) {
	h := anthropicHarness(t, func(c *Config) { c.MaxRetries = 1 })
	h.srv.SetDefault(judgetest.Reply{Status: 529, ErrorMessage: "Overloaded"})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "server error (HTTP 529) after 2 attempts", "Overloaded")
	if !resp.Error.Retryable || h.srv.Calls() != 2 {
		t.Errorf("retryable %v, calls %d", resp.Error.Retryable, h.srv.Calls())
	}

	bad := anthropicHarness(t, nil, judgetest.EchoWrongKey())
	badKey := newHarnessOn(t, bad.srv, bad.srv.URL(), func(c *Config) {
		c.Provider, c.Model, c.APIKeyEnv = "anthropic", "claude-sonnet-4-5", "ANTHROPIC_API_KEY"
	}, WithAPIKey("sk-wrong-key-echoed"))
	resp = badKey.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "authentication failed (HTTP 401)", "$ANTHROPIC_API_KEY", "invalid x-api-key: [redacted]")
	if strings.Contains(resp.Error.Message, "sk-wrong-key-echoed") {
		t.Errorf("the key leaked: %s", resp.Error.Message)
	}
}

// A 429 without Retry-After waits for the exhausted limit's reset.
func TestAnthropicRateLimitReset(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{}
	h.Set("anthropic-ratelimit-requests-remaining", "12")
	h.Set("anthropic-ratelimit-requests-reset", now.Add(time.Minute).Format(time.RFC3339))
	h.Set("anthropic-ratelimit-input-tokens-remaining", "0")
	h.Set("anthropic-ratelimit-input-tokens-reset", now.Add(7*time.Second).Format(time.RFC3339))
	if d, ok := retryAfter(h, now); !ok || d != 7*time.Second {
		t.Errorf("retryAfter = %v, %v; want 7s from the exhausted input-token limit", d, ok)
	}
	h.Set("Retry-After", "3")
	if d, ok := retryAfter(h, now); !ok || d != 3*time.Second {
		t.Errorf("retryAfter = %v, %v; want Retry-After's 3s", d, ok)
	}

	hr := anthropicHarness(t, nil)
	hr.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Status: 429, ErrorMessage: "rate limited", Header: map[string]string{
		"anthropic-ratelimit-output-tokens-remaining": "0",
		"anthropic-ratelimit-output-tokens-reset":     hr.clock.Now().Add(4 * time.Second).Format(time.RFC3339),
	}}, judgetest.Reply{Content: "ok"}))
	mustOK(t, hr.judge.Do(context.Background(), userRequest("x")))
	if s := hr.clock.Sleeps(); len(s) != 1 || s[0] != 4*time.Second {
		t.Errorf("waits %v; want the reset's 4s", s)
	}
}

// Replies the judge cannot trust are unparseable, keeping the server's words.
func TestAnthropicRepliesDecodedStrictly(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
	}{
		{"error in 200", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded now"}}`, "with an error instead of a completion: Overloaded now"},
		{"not a message", `{"type":"completion","completion":"x"}`, `not a message: type "completion"`},
		{"duplicate name", `{"type":"message","content":[],"content":[],"stop_reason":"end_turn"}`, "unparseable reply"},
		{"mistyped usage", `{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":"many"}}`, "unparseable reply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := anthropicHarness(t, nil)
			h.srv.SetDefault(judgetest.Reply{RawBody: tc.body, ContentType: "application/json"})
			wantError(t, h.judge.Do(context.Background(), userRequest("x")), abi.CodeJudge, tc.want)
		})
	}
}

// The fake server refuses what the real API refuses; the judge never
// sends it.
func TestAnthropicFakeRefuses(t *testing.T) {
	srv := judgetest.New(t, judgetest.Anthropic(), judgetest.WithAPIKey(testKey))
	for _, tc := range []struct{ body, want string }{
		{`{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens: Field required"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"n":2}`, "n: Extra inputs are not permitted"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, "messages.0.role"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"temperature":1.5}`, "temperature"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","input_schema":{"type":"array"}}]}`, "input_schema.type"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"tool","name":"t"}}`, "tool_choice"},
		{`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"stream":true}`, "stream"},
	} {
		req, _ := http.NewRequest("POST", srv.URL()+judgetest.AnthropicMessagesPath, strings.NewReader(tc.body))
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("anthropic-version", judgetest.AnthropicVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.UnmarshalRead(resp.Body, &e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s: %d %+v; want 400 naming %q", tc.body, resp.StatusCode, e, tc.want)
		}
	}
}

// FuzzDecodeAnthropic: any body decodes to one choice or a failure with
// the server's words, never a panic, and usage is never negative.
func FuzzDecodeAnthropic(f *testing.F) {
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","name":"v","input":{"score":7}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2,"cache_read_input_tokens":1}}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"text","text":"7"}],"stop_reason":"max_tokens"}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"text","text":"7"}],"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":900,"cache_read_input_tokens":-5}}`))
	f.Add([]byte(`{"type":"message","content":[],"usage":{"input_tokens":9223372036854775807,"output_tokens":1,"cache_creation_input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807}}`))
	f.Add([]byte(`{"type":"message","content":[],"usage":{"input_tokens":9223372036854775807,"output_tokens":1,"cache_read_input_tokens":1}}`))
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Add([]byte(`<html>bad gateway</html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, fail := decodeAnthropic("application/json", body)
		if fail != nil {
			if len(c.choices) != 0 {
				t.Fatal("a failure carries choices")
			}
			return
		}
		if len(c.choices) != 1 || c.inputTokens < 0 || c.outputTokens < 0 || c.cachedInputTokens < 0 || c.cacheWriteInputTokens < 0 ||
			c.cachedInputTokens+c.cacheWriteInputTokens > c.inputTokens {
			t.Fatalf("completion %+v", c)
		}
	})
}

// The system prompt, the static prefix of a kind's prompts, carries a
// cache breakpoint, and the fake API receives it there (and nowhere
// else); a request without a system prompt sets none.
func TestAnthropicCacheBreakpointOnTheSystemPrompt(t *testing.T) {
	h := anthropicHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "fine", "score": 7}`})
	req := abi.JudgeRequest{Messages: userRequest("grade this").Messages, Schema: []byte(verdictSchema), SchemaName: "verdict"}
	mustOK(t, h.judge.Do(context.Background(), req))
	mustOK(t, h.judge.Do(context.Background(), abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "no system"}}}))
	reqs := h.srv.Requests()
	if got := reqs[0].CacheBreakpoints; len(got) != 1 || got[0] != "system.0" {
		t.Errorf("breakpoints = %v; want [system.0]", got)
	}
	if !strings.Contains(string(reqs[0].Body), `"cache_control":{"type":"ephemeral"}`) {
		t.Errorf("body has no ephemeral cache_control: %s", reqs[0].Body)
	}
	if got := reqs[1].CacheBreakpoints; len(got) != 0 {
		t.Errorf("breakpoints without a system prompt = %v; want none", got)
	}
}

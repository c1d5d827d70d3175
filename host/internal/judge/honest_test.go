package judge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// Replies read honestly: what the server says about a reply (finish_reason,
// usage, an error in whatever shape) is what the judge reports.

func TestTruncatedReplyIsJudgeTruncatedWithoutRepair(t *testing.T) {
	tests := []struct {
		name    string
		content string
	}{
		{"cut mid-JSON", `{"reason": "The answer names the right city and`},
		// The server says the model had more to write: a complete-looking
		// reply is not trusted either (the score may be the "1" of "10").
		{"complete JSON marked length", `{"reason": "ok", "score": 1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true; c.MaxTokens = 40 })
			h.srv.SetDefault(judgetest.Truncated(tc.content))
			resp := h.judge.Do(context.Background(), schemaRequest("grade"))
			wantError(t, resp, abi.CodeTruncated, "cut off at the token limit", `finish_reason "length"`, "max_tokens 40", "raise max_tokens")
			if strings.Contains(resp.Error.Message, "not a JSON object") {
				t.Errorf("truncation misdiagnosed as a parse problem: %s", resp.Error.Message)
			}
			if h.srv.Calls() != 1 || resp.Usage.Calls != 1 {
				t.Errorf("server calls %d, usage calls %d; want 1 and 1 (no repair: it cannot help)", h.srv.Calls(), resp.Usage.Calls)
			}
		})
	}
}

func TestTruncatedRepairIsJudgeTruncated(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true })
	h.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Content: "no json here"}, judgetest.Truncated(`{"reason": "x`)))
	resp := h.judge.Do(context.Background(), schemaRequest("grade"))
	wantError(t, resp, abi.CodeTruncated, "no max_tokens was sent")
	if h.srv.Calls() != 2 || resp.Usage.Calls != 2 {
		t.Errorf("server calls %d, usage calls %d; want 2 (reply, repair)", h.srv.Calls(), resp.Usage.Calls)
	}
}

func TestSampledAllTruncatedIsJudgeTruncated(t *testing.T) {
	h := newHarness(t, nil) // no logprobs: samples
	h.srv.SetDefault(judgetest.Truncated(`{"reason": "fine", "score": 7`))
	req := schemaRequest("grade")
	req.Score = &abi.ScoreSpec{Min: 0, Max: 10, Samples: 3}
	resp := h.judge.Do(context.Background(), req)
	wantError(t, resp, abi.CodeTruncated, "cut off at the token limit")
	if h.srv.Calls() != 3 || resp.Usage.Calls != 3 {
		t.Errorf("server calls %d, usage calls %d; want 3", h.srv.Calls(), resp.Usage.Calls)
	}

	// One cut sample among good ones is dropped and said so.
	h2 := newHarness(t, nil)
	h2.srv.SetDefault(judgetest.Sequence(judgetest.Truncated(`{"reason": "fine", "score": 1`),
		judgetest.Reply{Content: `{"reason": "fine", "score": 6}`}))
	resp = h2.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if resp.Score.Value != 6 || !strings.Contains(resp.Score.Cause, "1 of 3 samples unusable") {
		t.Errorf("score = %+v; want 6 from two samples, the cut one named", resp.Score)
	}
}

func TestContentFilterIsNamed(t *testing.T) {
	h := newHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: "", FinishReason: "content_filter"})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "content filter", "content_filter")
}

func TestReplyWithoutUsageIsUnknownNotZero(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Price = Price{InputPerMillion: 1e6, OutputPerMillion: 1e6} })
	h.srv.SetDefault(judgetest.Reply{Content: "a reply of some forty characters, give or take", NoUsage: true})
	resp := h.judge.Do(context.Background(), userRequest(strings.Repeat("word ", 100)))
	mustOK(t, resp)
	u := resp.Usage
	if !u.UsageUnknown {
		t.Fatalf("usage = %+v; want usage_unknown", u)
	}
	// Counted at the judge's own estimate: ~500 characters in, ~46 out.
	if u.InputTokens < 100 || u.OutputTokens < 5 || u.USD <= 0 {
		t.Errorf("usage = %+v; want estimated tokens and USD, not zero", u)
	}
	tot := h.judge.Totals()
	if tot.UsageUnknown != 1 || tot.InputTokens != int64(u.InputTokens) || tot.USD != u.USD {
		t.Errorf("totals = %+v; want the estimate counted and 1 usage-unknown call", tot)
	}

	// A reply with usage is not marked.
	h.srv.SetDefault(judgetest.Reply{Content: "ok"})
	if resp := h.judge.Do(context.Background(), userRequest("y")); resp.Usage.UsageUnknown {
		t.Errorf("usage = %+v; want known", resp.Usage)
	}
}

func TestSpendLimitHoldsWithoutUsage(t *testing.T) {
	// A server that leaves usage out must not spend past the limit.
	h := newHarness(t, func(c *Config) { c.Price = Price{InputPerMillion: 1e6} }, WithSpendLimit(15))
	h.srv.SetDefault(judgetest.Reply{Content: "ok", NoUsage: true})
	for i := range 10 {
		h.judge.Do(context.Background(), userRequest(strings.Repeat("x", i+40)))
	}
	if h.srv.Calls() >= 10 {
		t.Errorf("server calls = %d; the spend limit never held", h.srv.Calls())
	}
}

func TestServerWordsAreKept(t *testing.T) {
	tests := []struct {
		name  string
		reply judgetest.Reply
		code  abi.Code
		frags []string
	}{
		{"200 with an error object", judgetest.ErrorIn200("upstream model crashed: CUDA out of memory"), abi.CodeJudge,
			[]string{"HTTP 200 with an error", "CUDA out of memory"}},
		{"200 with an error string", judgetest.Reply{RawBody: `{"error": "model 'llama9' not loaded"}`, ContentType: "application/json"}, abi.CodeJudge,
			[]string{"HTTP 200 with an error", "model 'llama9' not loaded"}},
		{"plain-text 503", judgetest.PlainText(503, "upstream connect error or disconnect/reset before headers. reset reason: overflow"), abi.CodeJudge,
			[]string{"server error (HTTP 503)", "reset reason: overflow"}},
		{"html 502", judgetest.Reply{Status: 502, RawBody: "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.25</center></body></html>", ContentType: "text/html"}, abi.CodeJudge,
			[]string{"server error (HTTP 502)", "502 Bad Gateway", "nginx/1.25"}},
		{"fastapi 422", judgetest.Reply{Status: 422, RawBody: `{"detail":[{"loc":["body","messages",0,"content"],"msg":"field required","type":"value_error.missing"}]}`, ContentType: "application/json"}, abi.CodeJudge,
			[]string{"request rejected (HTTP 422)", "body.messages.0.content: field required"}},
		{"vllm error object", judgetest.Reply{Status: 400, RawBody: `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","code":400}`, ContentType: "application/json"}, abi.CodeJudge,
			[]string{"request rejected (HTTP 400)", "maximum context length is 4096 tokens"}},
		{"json without choices", judgetest.Reply{RawBody: `{"hello": "world"}`, ContentType: "application/json"}, abi.CodeJudge,
			[]string{"no choices", `{"hello": "world"}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxRetries = -1 })
			h.srv.SetDefault(tc.reply)
			resp := h.judge.Do(context.Background(), userRequest("x"))
			wantError(t, resp, tc.code, tc.frags...)
		})
	}
}

func TestServerWordsAreBoundedCleanAndKeyless(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = -1 })
	body := "bad key " + testKey + "\x1b[31m red \r\nforged: level=INFO\x00 " + strings.Repeat("padding ", 500)
	h.srv.SetDefault(judgetest.PlainText(500, body))
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "server error (HTTP 500)", "bad key [redacted]", "red forged: level=INFO")
	msg := resp.Error.Message
	if strings.ContainsAny(msg, "\x1b\r\n\x00") {
		t.Errorf("control characters kept: %q", msg)
	}
	if len(msg) > maxServerWords+200 {
		t.Errorf("message is %d bytes; want the server's words bounded to about %d", len(msg), maxServerWords)
	}
}

func TestCallsCountUpstreamCompletions(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(c *Config) { c.SupportsJSONSchema = true }, WithCache(openStore(t), CacheReadWrite))
	h.srv.On(judgetest.ContainsMessage("needs repair"), judgetest.Sequence(judgetest.Reply{Content: "nope"}, judgetest.Reply{Content: `{"reason": "ok", "score": 3}`}))
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "ok", "score": 5}`})

	sampled := schemaRequest("sampled")
	sampled.Score = &abi.ScoreSpec{Min: 0, Max: 10, Samples: 4}
	var resps []abi.JudgeResponse
	for _, tc := range []struct {
		req                 abi.JudgeRequest
		calls, attempts     int
		cacheHit, wantError bool
	}{
		{schemaRequest("plain"), 1, 1, false, false},
		{schemaRequest("needs repair"), 2, 2, false, false},
		{sampled, 4, 4, false, false},
		{schemaRequest("plain"), 0, 0, true, false}, // replayed: nothing sent
		{abi.JudgeRequest{}, 0, 0, false, true},     // refused: nothing sent
	} {
		resp := h.judge.Do(ctx, tc.req)
		resps = append(resps, resp)
		if (resp.Error != nil) != tc.wantError || resp.Usage.Calls != tc.calls || resp.Usage.Attempts != tc.attempts || resp.Usage.CacheHit != tc.cacheHit {
			t.Errorf("%q: usage %+v, error %v; want calls %d, attempts %d, cache hit %v", tc.req.Messages, resp.Usage, resp.Error, tc.calls, tc.attempts, tc.cacheHit)
		}
	}
	// One definition: the judge's totals are the sum over its responses,
	// and the server saw exactly that many completions.
	var calls, attempts int
	var usd float64
	for _, r := range resps {
		calls += r.Usage.Calls
		attempts += r.Usage.Attempts
		usd += r.Usage.USD
	}
	tot := h.judge.Totals()
	if tot.Calls != int64(calls) || tot.Attempts != int64(attempts) || tot.USD != usd || h.srv.Calls() != calls || tot.Requests != 5 {
		t.Errorf("totals %+v, server %d; want calls %d, attempts %d, usd %v over 5 requests", tot, h.srv.Calls(), calls, attempts, usd)
	}
}

// A 500 whose body names the error's kind in "error" and says what went
// wrong in "message" (Spring, Express and many gateways answer so) keeps
// the message, cleaned as any server words are.
func TestServerErrorKeepsTheMessageBesideABareError(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetries = -1 })
	message := "CUDA out of memory for key " + testKey + "\x1b[31m\r\nforged: level=INFO " + strings.Repeat("padding ", 500)
	body, err := json.Marshal(map[string]any{"status": 500, "error": "Internal Server Error", "message": message})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.SetDefault(judgetest.Reply{Status: 500, RawBody: string(body), ContentType: "application/json"})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "server error (HTTP 500)", "Internal Server Error: CUDA out of memory for key [redacted]", "forged: level=INFO")
	msg := resp.Error.Message
	if strings.ContainsAny(msg, "\x1b\r\n\x00") {
		t.Errorf("control characters kept: %q", msg)
	}
	if len(msg) > maxServerWords+200 {
		t.Errorf("message is %d bytes; want the server's words bounded to about %d", len(msg), maxServerWords)
	}
}

package judge

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

func geminiHarness(t *testing.T, edit func(*Config), opts ...judgetest.Option) *harness {
	t.Helper()
	srv := judgetest.New(t, append([]judgetest.Option{judgetest.Gemini(), judgetest.WithAPIKey(testKey)}, opts...)...)
	return newHarnessOn(t, srv, srv.URL(), func(c *Config) {
		c.Provider = "gemini"
		c.Model = "gemini-2.5-flash"
		c.APIKeyEnv = "GEMINI_API_KEY"
		if edit != nil {
			edit(c)
		}
	})
}

// The request is what generateContent takes, sent by the SDK: the key in
// x-goog-api-key, the system prompt apart, the schema as
// responseJsonSchema with the JSON MIME type, logprobs asked for; the
// reply's logprobs weight the score, and usage is counted.
func TestGeminiStructuredWeightedReply(t *testing.T) {
	h := geminiHarness(t, func(c *Config) { c.SupportsLogprobs = true; c.MaxTopLogprobs = 5 })
	reply := judgetest.JSONScoreReply("fine", "7", map[string]float64{"7": 0.5, "8": 0.5})
	reply.Usage = &judgetest.Usage{PromptTokens: 120, CompletionTokens: 9, CachedTokens: 100}
	h.srv.SetDefault(reply)
	temp := 0.2
	req := abi.JudgeRequest{Messages: userRequest("grade this").Messages, Schema: []byte(verdictSchema), SchemaName: "verdict",
		Temperature: &temp, MaxTokens: 300, Score: &abi.ScoreSpec{Min: 0, Max: 10}}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if string(resp.JSON) != `{"reason":"fine","score":7}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if resp.Score == nil || resp.Score.Mode != abi.ScoreWeighted || resp.Score.Value != 7.5 {
		t.Errorf("score = %+v; want 7.5 weighted", resp.Score)
	}
	r := h.srv.Requests()[0]
	if r.Header.Get("X-Goog-Api-Key") != testKey || r.Header.Get("Authorization") != "" {
		t.Errorf("headers: x-goog-api-key set %v, Authorization %q", r.Header.Get("X-Goog-Api-Key") != "", r.Header.Get("Authorization"))
	}
	if r.Model != "gemini-2.5-flash" || r.MaxTokens != 300 || r.Temperature == nil || *r.Temperature < 0.19 || *r.Temperature > 0.21 ||
		!r.Logprobs || r.TopLogprobs != 5 {
		t.Errorf("request: model %q, max %d, temperature %v, logprobs %v/%d", r.Model, r.MaxTokens, r.Temperature, r.Logprobs, r.TopLogprobs)
	}
	if r.ResponseFormat == nil || r.ResponseFormat.Type != "json_schema" || !strings.Contains(string(r.ResponseFormat.JSONSchema.Schema), `"additionalProperties"`) {
		t.Errorf("response format = %+v", r.ResponseFormat)
	}
	if r.Messages[0].Role != "system" || r.Messages[0].Content != "You are a strict grader." || strings.Contains(r.LastMessage(), schemaInstruction) {
		t.Errorf("messages = %+v", r.Messages)
	}
	var body map[string]jsontext.Value
	if err := json.Unmarshal(r.Body, &body); err != nil || body["systemInstruction"] == nil || body["generationConfig"] == nil {
		t.Errorf("body = %s (%v)", r.Body, err)
	}
	if resp.Usage.InputTokens != 120 || resp.Usage.OutputTokens != 9 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if tot := h.judge.Totals(); tot.CachedInputTokens != 100 {
		t.Errorf("totals = %+v", tot)
	}
	if id := h.judge.Identity(); id.Provider != "gemini" || id.Endpoint != h.srv.URL() {
		t.Errorf("identity = %+v", id)
	}
}

// Without logprobs a score is read as written, the cause naming the
// setting; several samples come from candidateCount with supports_n.
func TestGeminiRawAndSampled(t *testing.T) {
	h := geminiHarness(t, nil)
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "r", "score": 6}`})
	resp := h.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("grade").Messages, Schema: []byte(verdictSchema),
		Score: &abi.ScoreSpec{Min: 0, Max: 10}})
	mustOK(t, resp)
	if resp.Score == nil || resp.Score.Mode != abi.ScoreRaw || resp.Score.Cause != "judge has no logprobs (supports_logprobs is false)" ||
		h.srv.Requests()[0].Logprobs {
		t.Errorf("score = %+v", resp.Score)
	}

	n := geminiHarness(t, func(c *Config) { c.SupportsN = true })
	n.srv.SetDefault(judgetest.Reply{Choices: []judgetest.Choice{{Content: `{"reason": "a", "score": 6}`}, {Content: `{"reason": "b", "score": 8}`}}})
	resp = n.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("grade").Messages, Schema: []byte(verdictSchema),
		Score: &abi.ScoreSpec{Min: 0, Max: 10, Samples: 2}})
	mustOK(t, resp)
	if resp.Score == nil || resp.Score.Mode != abi.ScoreSampled || resp.Score.Value != 7 || n.srv.Calls() != 1 || n.srv.Requests()[0].N != 2 {
		t.Errorf("score = %+v, calls %d", resp.Score, n.srv.Calls())
	}
}

// MAX_TOKENS is truncation, a SAFETY stop a content filter, an unusable
// reply is repaired once.
func TestGeminiFinishes(t *testing.T) {
	h := geminiHarness(t, nil)
	h.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Content: "I think it is a 7"}, judgetest.Reply{Content: `{"reason": "r", "score": 7}`}))
	mustOK(t, h.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("grade").Messages, Schema: []byte(verdictSchema)}))
	if h.srv.Calls() != 2 || h.srv.Requests()[1].Messages[2].Role != "assistant" {
		t.Errorf("no repair as a model turn: %d calls", h.srv.Calls())
	}

	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "r", "score": 7}`, FinishReason: "length"})
	wantError(t, h.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("cut").Messages, MaxTokens: 50}),
		abi.CodeTruncated, "max_tokens 50")

	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Refusal: "no"})
	wantError(t, h.judge.Do(context.Background(), userRequest("refuse")), abi.CodeJudge, "content filter")
}

// Errors keep the API's words; a wrong key (400 API_KEY_INVALID) is an
// authentication failure naming the variable, the echoed key redacted;
// a 429 waits for the RetryInfo's delay.
func TestGeminiErrors(t *testing.T) {
	h := geminiHarness(t, func(c *Config) { c.MaxRetries = 1 })
	h.srv.SetDefault(judgetest.Reply{Status: 503, ErrorMessage: "The model is overloaded. Please try again later."})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "server error (HTTP 503) after 2 attempts", "The model is overloaded")
	if !resp.Error.Retryable || h.srv.Calls() != 2 {
		t.Errorf("retryable %v, calls %d", resp.Error.Retryable, h.srv.Calls())
	}

	bad := geminiHarness(t, nil, judgetest.EchoWrongKey())
	badKey := newHarnessOn(t, bad.srv, bad.srv.URL(), func(c *Config) {
		c.Provider, c.Model, c.APIKeyEnv = "gemini", "gemini-2.5-flash", "GEMINI_API_KEY"
	}, WithAPIKey("AIza-wrong-key-echoed"))
	resp = badKey.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "authentication failed (HTTP 400)", "$GEMINI_API_KEY", "API key not valid", "[redacted]")
	if strings.Contains(resp.Error.Message, "AIza-wrong-key-echoed") || bad.srv.Calls() != 1 {
		t.Errorf("the key leaked or the call was retried: %s (%d calls)", resp.Error.Message, bad.srv.Calls())
	}

	hr := geminiHarness(t, nil)
	hr.srv.SetDefault(judgetest.Sequence(judgetest.Reply{Status: 429, ContentType: "application/json",
		RawBody: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",` +
			`"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`},
		judgetest.Reply{Content: "ok"}))
	mustOK(t, hr.judge.Do(context.Background(), userRequest("x")))
	if s := hr.clock.Sleeps(); len(s) != 1 || s[0] != 37*time.Second {
		t.Errorf("waits %v; want RetryInfo's 37s", s)
	}
}

// A judge without a key makes no request and says which variable is
// empty; the SDK never reads a key of its own from the environment.
func TestGeminiWithoutKey(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "from-the-environment")
	t.Setenv("GOOGLE_API_KEY", "from-the-environment")
	srv := judgetest.New(t, judgetest.Gemini())
	j, err := New(Config{Name: "g", Provider: "gemini", Model: "gemini-2.5-flash", BaseURL: srv.URL(), APIKeyEnv: "ANVIL_NO_SUCH_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, j.Do(context.Background(), userRequest("x")), abi.CodeJudge, "authentication failed (no request sent)", "$ANVIL_NO_SUCH_KEY is empty")
	if srv.Calls() != 0 {
		t.Errorf("%d requests sent without a key", srv.Calls())
	}
}

// Replies the judge cannot trust are unparseable, keeping the server's words.
func TestGeminiRepliesDecodedStrictly(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
	}{
		{"error in 200", `{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`, "with an error instead of a completion: Internal error encountered."},
		{"empty", `{}`, "no candidates and no prompt feedback"},
		{"duplicate name", `{"candidates":[],"candidates":[{"content":{"parts":[{"text":"7"}]}}]}`, "unparseable reply"},
		{"mistyped usage", `{"candidates":[{"content":{"parts":[{"text":"7"}]}}],"usageMetadata":{"promptTokenCount":"many"}}`, "unparseable reply"},
		{"prompt blocked", `{"promptFeedback":{"blockReason":"SAFETY"}}`, "content filter"},
		{"html", `<html>bad gateway</html>`, "unparseable reply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := geminiHarness(t, nil)
			h.srv.SetDefault(judgetest.Reply{RawBody: tc.body, ContentType: "application/json"})
			wantError(t, h.judge.Do(context.Background(), userRequest("x")), abi.CodeJudge, tc.want)
		})
	}
}

// The fake server refuses what the real API refuses; the judge never
// sends it.
func TestGeminiFakeRefuses(t *testing.T) {
	srv := judgetest.New(t, judgetest.Gemini(), judgetest.WithAPIKey(testKey))
	const path = "/v1beta/models/gemini-2.5-flash:generateContent"
	const contents = `"contents":[{"role":"user","parts":[{"text":"x"}]}]`
	for _, tc := range []struct {
		path, key, body string
		status          int
		want            string
	}{
		{path, testKey, `{` + contents + `,"n":2}`, 400, `Unknown name "n"`},
		{path, testKey, `{"contents":[]}`, 400, "contents is not specified"},
		{path, testKey, `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, 400, "valid role"},
		{path, testKey, `{"contents":[{"role":"user","parts":[{}]}]}`, 400, "oneof field 'data'"},
		{path, testKey, `{` + contents + `,"generationConfig":{"temperature":2.5}}`, 400, "temperature"},
		{path, testKey, `{` + contents + `,"generationConfig":{"logprobs":3}}`, 400, "only valid if response_logprobs"},
		{path, testKey, `{` + contents + `,"generationConfig":{"responseJsonSchema":{"type":"object"}}}`, 400, "must be application/json"},
		{path, testKey, `{` + contents + `,"generationConfig":{"response_format":{}}}`, 400, `Unknown name "response_format"`},
		{path + "?alt=sse", testKey, `{` + contents + `}`, 400, "streaming"},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", testKey, `{` + contents + `}`, 400, "streaming"},
		{"/v1/models/gemini-2.5-flash:generateContent", testKey, `{` + contents + `}`, 404, "not found"},
		{path + "?key=" + testKey, testKey, `{` + contents + `}`, 400, "x-goog-api-key"},
		{path, "", `{` + contents + `}`, 403, "unregistered callers"},
		{path, "wrong", `{` + contents + `}`, 400, "API key not valid"},
	} {
		req, _ := http.NewRequest("POST", srv.URL()+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		if tc.key != "" {
			req.Header.Set("x-goog-api-key", tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		json.UnmarshalRead(resp.Body, &e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || e.Error.Code != tc.status || e.Error.Status == "" || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s %s: %d %+v; want %d naming %q", tc.path, tc.body, resp.StatusCode, e, tc.status, tc.want)
		}
	}
}

// FuzzDecodeGemini: any body decodes to choices or a failure, never a
// panic; usage is never negative.
func FuzzDecodeGemini(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"7"}]},"finishReason":"STOP","logprobsResult":{"chosenCandidates":[{"token":"7","logProbability":-0.1}],"topCandidates":[{"candidates":[{"token":"7","logProbability":-0.1}]}]}}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"cachedContentTokenCount":9}}`))
	f.Add([]byte(`{"promptFeedback":{"blockReason":"OTHER"}}`))
	f.Add([]byte(`{"error":{"code":400,"message":"bad"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, fail := decodeGemini("application/json", body)
		if fail != nil {
			if len(c.choices) != 0 {
				t.Fatal("a failure carries choices")
			}
			return
		}
		if len(c.choices) == 0 || c.inputTokens < 0 || c.outputTokens < 0 || c.cachedInputTokens > c.inputTokens || c.cachedInputTokens < 0 {
			t.Fatalf("completion %+v", c)
		}
	})
}

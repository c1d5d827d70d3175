package judge

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// The test credential: the fake server verifies requests signed with it.
const (
	testAccessKeyID     = "AKIDTESTCANARY0123456"
	testSecretAccessKey = "test-secret-SECRET-9f8e7d6c5b4a"
)

// awsEnv makes the AWS credential chain find the test credential in the
// environment and nothing anywhere else (no files, no instance metadata).
func awsEnv(t *testing.T, akid, secret string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", akid)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "")
}

func bedrockHarness(t *testing.T, edit func(*Config), opts ...judgetest.Option) *harness {
	t.Helper()
	awsEnv(t, testAccessKeyID, testSecretAccessKey)
	srv := judgetest.New(t, append([]judgetest.Option{judgetest.Bedrock("eu-west-3", testAccessKeyID, testSecretAccessKey)}, opts...)...)
	return newHarnessOn(t, srv, srv.URL(), func(c *Config) {
		c.Provider = "bedrock"
		c.Model = "anthropic.claude-3-5-haiku-20241022-v1:0"
		c.Region = "eu-west-3"
		c.APIKeyEnv = ""
		if edit != nil {
			edit(c)
		}
	}, WithGetenv(func(k string) string {
		return map[string]string{"AWS_ACCESS_KEY_ID": testAccessKeyID, "AWS_SECRET_ACCESS_KEY": testSecretAccessKey}[k]
	}))
}

// The request is a Converse call signed for bedrock in the judge's region
// (the fake recomputes the signature): the model ID in the path, the
// system prompt apart, the schema as a forced tool, whose input is the
// structured reply; no logprobs, so the score is read as written.
func TestBedrockStructuredReply(t *testing.T) {
	h := bedrockHarness(t, func(c *Config) { c.Headers = map[string]string{"X-Team": "evals"} })
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "fine", "score": 7}`,
		Usage: &judgetest.Usage{PromptTokens: 120, CompletionTokens: 9, CachedTokens: 100}})
	temp := 0.2
	req := abi.JudgeRequest{Messages: userRequest("grade this").Messages, Schema: []byte(verdictSchema), SchemaName: "verdict",
		Temperature: &temp, MaxTokens: 300, Score: &abi.ScoreSpec{Min: 0, Max: 10}}
	resp := h.judge.Do(context.Background(), req)
	mustOK(t, resp)
	if string(resp.JSON) != `{"reason":"fine","score":7}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if resp.Score == nil || resp.Score.Value != 7 || resp.Score.Mode != abi.ScoreRaw ||
		resp.Score.Cause != "judge has no logprobs (provider bedrock returns none)" {
		t.Errorf("score = %+v", resp.Score)
	}
	r := h.srv.Requests()[0]
	if r.Model != "anthropic.claude-3-5-haiku-20241022-v1:0" || r.ToolChoice != "verdict" || r.MaxTokens != 300 ||
		r.Temperature == nil || *r.Temperature < 0.19 || *r.Temperature > 0.21 {
		t.Errorf("request: model %q, tool %q, max_tokens %d, temperature %v", r.Model, r.ToolChoice, r.MaxTokens, r.Temperature)
	}
	if !strings.Contains(r.Header.Get("Authorization"), "/eu-west-3/bedrock/aws4_request") || r.Header.Get("X-Team") != "evals" {
		t.Errorf("not signed for bedrock in eu-west-3, or without the configured header")
	}
	if r.Messages[0].Role != "system" || strings.Contains(r.LastMessage(), schemaInstruction) {
		t.Errorf("messages = %+v", r.Messages)
	}
	var body struct {
		ToolConfig struct {
			Tools []struct {
				ToolSpec struct {
					InputSchema struct {
						JSON map[string]any `json:"json"`
					} `json:"inputSchema"`
				} `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || len(body.ToolConfig.Tools) != 1 ||
		body.ToolConfig.Tools[0].ToolSpec.InputSchema.JSON["additionalProperties"] != false {
		t.Errorf("toolConfig = %+v (%v): %s", body.ToolConfig, err, r.Body)
	}
	if resp.Usage.InputTokens != 120 || resp.Usage.OutputTokens != 9 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if tot := h.judge.Totals(); tot.CachedInputTokens != 100 {
		t.Errorf("totals = %+v", tot)
	}
	if id := h.judge.Identity(); id.Provider != "bedrock" || id.Endpoint != h.srv.URL()+"?region=eu-west-3" {
		t.Errorf("identity = %+v", id)
	}
}

// Samples are separate calls; consecutive messages of one role are one
// turn (the API wants them alternating); a refusal and truncation are
// named.
func TestBedrockSamplesTurnsFinishes(t *testing.T) {
	h := bedrockHarness(t, nil)
	h.srv.SetDefault(judgetest.Sequence(
		judgetest.Reply{Content: `{"reason": "a", "score": 6}`},
		judgetest.Reply{Content: `{"reason": "b", "score": 8}`}))
	resp := h.judge.Do(context.Background(), abi.JudgeRequest{Messages: []abi.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}},
		Schema: []byte(verdictSchema), Score: &abi.ScoreSpec{Min: 0, Max: 10, Samples: 2}})
	mustOK(t, resp)
	if resp.Score == nil || resp.Score.Mode != abi.ScoreSampled || resp.Score.Value != 7 || h.srv.Calls() != 2 ||
		!strings.HasPrefix(resp.Score.Cause, "judge has no logprobs (provider bedrock returns none); ") {
		t.Errorf("score = %+v, calls %d", resp.Score, h.srv.Calls())
	}

	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Content: "7", FinishReason: "length"})
	wantError(t, h.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("cut").Messages, MaxTokens: 50}), abi.CodeTruncated, "max_tokens 50")
	h.srv.Reset()
	h.srv.SetDefault(judgetest.Reply{Refusal: "Sorry, the model cannot answer this question."})
	wantError(t, h.judge.Do(context.Background(), userRequest("refuse")), abi.CodeJudge, "content filter")
}

// A model that takes no forced tool gets the schema in the prompt, for
// the rest of the run.
func TestBedrockToolChoiceRejected(t *testing.T) {
	h := bedrockHarness(t, nil)
	h.srv.On(func(r judgetest.RecordedRequest) bool { return r.ToolChoice != "" },
		judgetest.Reply{Status: 400, ErrorMessage: "This model doesn't support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again."})
	h.srv.SetDefault(judgetest.Reply{Content: `{"reason": "r", "score": 5}`})
	mustOK(t, h.judge.Do(context.Background(), abi.JudgeRequest{Messages: userRequest("grade").Messages, Schema: []byte(verdictSchema)}))
	reqs := h.srv.Requests()
	if len(reqs) != 2 || reqs[1].ToolChoice != "" || !strings.Contains(reqs[1].LastMessage(), schemaInstruction) {
		t.Errorf("requests = %d; the second should carry the schema in the prompt", len(reqs))
	}
}

// Errors keep the API's words; throttling is retried; a credential the
// service does not know is an authentication failure (403) that the
// breaker counts, its access key ID scrubbed when echoed.
func TestBedrockErrors(t *testing.T) {
	h := bedrockHarness(t, func(c *Config) { c.MaxRetries = 1 })
	h.srv.SetDefault(judgetest.Reply{Status: 429, ErrorMessage: "Too many requests, please wait before trying again.", RetryAfter: "2"})
	resp := h.judge.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "rate limited (HTTP 429) after 2 attempts", "Too many requests")
	if s := h.clock.Sleeps(); len(s) != 1 || s[0].Seconds() != 2 {
		t.Errorf("waits %v; want Retry-After's 2s", s)
	}

	srv := judgetest.New(t, judgetest.Bedrock("eu-west-3", testAccessKeyID, testSecretAccessKey), judgetest.EchoWrongKey())
	awsEnv(t, "AKIDWRONGCANARY99999", "wrong-secret-SECRET-000")
	j, err := New(Config{Name: "b", Provider: "bedrock", Model: "amazon.nova-pro-v1:0", Region: "eu-west-3", BaseURL: srv.URL()},
		WithGetenv(func(k string) string {
			return map[string]string{"AWS_ACCESS_KEY_ID": "AKIDWRONGCANARY99999", "AWS_SECRET_ACCESS_KEY": "wrong-secret-SECRET-000"}[k]
		}))
	if err != nil {
		t.Fatal(err)
	}
	resp = j.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "permission denied (HTTP 403)", "The security token included in the request is invalid", "[redacted]")
	if strings.Contains(resp.Error.Message, "AKIDWRONGCANARY99999") {
		t.Errorf("the access key ID leaked: %s", resp.Error.Message)
	}

	// Right key, wrong secret: the signature does not match.
	srv2 := judgetest.New(t, judgetest.Bedrock("eu-west-3", testAccessKeyID, testSecretAccessKey))
	awsEnv(t, testAccessKeyID, "not-the-secret-SECRET")
	j2, _ := New(Config{Name: "b", Provider: "bedrock", Model: "amazon.nova-pro-v1:0", Region: "eu-west-3", BaseURL: srv2.URL()})
	wantError(t, j2.Do(context.Background(), userRequest("x")), abi.CodeJudge, "HTTP 403", "signature we calculated does not match")

	// Another region signs for another scope.
	awsEnv(t, testAccessKeyID, testSecretAccessKey)
	j3, _ := New(Config{Name: "b", Provider: "bedrock", Model: "amazon.nova-pro-v1:0", Region: "us-east-1", BaseURL: srv2.URL()})
	wantError(t, j3.Do(context.Background(), userRequest("x")), abi.CodeJudge, "HTTP 403", "want eu-west-3/bedrock, got us-east-1/bedrock")
}

// Without credentials anywhere in the chain nothing is sent, and the
// error says where credentials come from.
func TestBedrockWithoutCredentials(t *testing.T) {
	awsEnv(t, "", "")
	srv := judgetest.New(t, judgetest.Bedrock("eu-west-3", testAccessKeyID, testSecretAccessKey))
	j, err := New(Config{Name: "b", Provider: "bedrock", Model: "amazon.nova-pro-v1:0", Region: "eu-west-3", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	resp := j.Do(context.Background(), userRequest("x"))
	wantError(t, resp, abi.CodeJudge, "authentication failed (no request sent)", "check the AWS credentials", "get credentials")
	if srv.Calls() != 0 {
		t.Errorf("%d requests sent unsigned", srv.Calls())
	}
}

// Replies the judge cannot trust are unparseable, keeping the server's words.
func TestBedrockRepliesDecodedStrictly(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
	}{
		{"error in 200", `{"message":"Internal server error"}`, "with an error instead of a completion: Internal server error"},
		{"no output", `{"stopReason":"end_turn"}`, "no output message"},
		{"duplicate name", `{"output":{"message":{"content":[]}},"output":{}}`, "unparseable reply"},
		{"mistyped usage", `{"output":{"message":{"content":[{"text":"7"}]}},"stopReason":"end_turn","usage":{"inputTokens":"many"}}`, "unparseable reply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := bedrockHarness(t, nil)
			h.srv.SetDefault(judgetest.Reply{RawBody: tc.body, ContentType: "application/json"})
			wantError(t, h.judge.Do(context.Background(), userRequest("x")), abi.CodeJudge, tc.want)
		})
	}
}

// The fake server refuses an unsigned request (its other checks are
// judgetest's tests).
func TestBedrockFakeRefuses(t *testing.T) {
	srv := judgetest.New(t, judgetest.Bedrock("eu-west-3", testAccessKeyID, testSecretAccessKey))
	req, _ := http.NewRequest("POST", srv.URL()+"/model/m/converse", strings.NewReader(`{"messages":[{"role":"user","content":[{"text":"x"}]}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), "MissingAuthenticationTokenException") {
		t.Errorf("unsigned request: %d %s", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"))
	}
}

// FuzzDecodeBedrock: any body decodes to one choice or a failure, never a
// panic; usage is never negative.
func FuzzDecodeBedrock(f *testing.F) {
	f.Add([]byte(`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"v","input":{"score":7}}}]}},"stopReason":"tool_use","usage":{"inputTokens":3,"outputTokens":2,"cacheReadInputTokens":1}}`))
	f.Add([]byte(`{"output":{"message":{"content":[{"text":"7"}]}},"stopReason":"max_tokens"}`))
	f.Add([]byte(`{"message":"Too many requests"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, fail := decodeBedrock("application/json", body)
		if fail != nil {
			if len(c.choices) != 0 {
				t.Fatal("a failure carries choices")
			}
			return
		}
		if len(c.choices) != 1 || c.inputTokens < 0 || c.outputTokens < 0 || c.cachedInputTokens > c.inputTokens {
			t.Fatalf("completion %+v", c)
		}
	})
}

package judgetest

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

func post(t *testing.T, url, key string, body any) (*http.Response, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

func body(extra map[string]any) map[string]any {
	b := map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "Evaluation Steps: be fair"}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestWireFormat(t *testing.T) {
	s := New(t)
	s.On(ContainsMessage("Evaluation Steps"), JSONScoreReply("good", "7", map[string]float64{"7": 0.5, "8": 0.3, "6": 0.2}))
	resp, raw := post(t, s.URL(), "", body(map[string]any{"logprobs": true, "top_logprobs": 2, "n": 2, "temperature": 0.5}))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, %s", resp.StatusCode, raw)
	}
	var got wireCompletion
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || got.ID == "" || got.Model != "m" || len(got.Choices) != 2 {
		t.Fatalf("completion = %+v", got)
	}
	ch := got.Choices[1]
	if ch.Index != 1 || ch.Message.Role != "assistant" || ch.Message.Content != `{"reason": "good", "score": 7}` || ch.Logprobs == nil {
		t.Fatalf("choice = %+v", ch)
	}
	var text strings.Builder
	var scoreTok *wireToken
	for i, tok := range ch.Logprobs.Content {
		text.WriteString(tok.Token)
		if len(tok.Bytes) != len(tok.Token) || len(tok.TopLogprobs) > 2 {
			t.Errorf("token %+v: bytes or top_logprobs wrong", tok)
		}
		if tok.Token == "7" {
			scoreTok = &ch.Logprobs.Content[i]
		}
	}
	if text.String() != ch.Message.Content {
		t.Errorf("tokens spell %q", text.String())
	}
	if scoreTok == nil || len(scoreTok.TopLogprobs) != 2 || scoreTok.TopLogprobs[0].Token != "7" || scoreTok.TopLogprobs[1].Token != "8" ||
		math.Abs(scoreTok.Logprob-math.Log(0.5)) > 1e-12 {
		t.Errorf("score token = %+v; want 7 then 8, truncated to 2", scoreTok)
	}
	if got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens || got.Usage.CompletionTokens == 0 {
		t.Errorf("usage = %+v", got.Usage)
	}

	recs := s.Requests()
	if len(recs) != 1 || s.Calls() != 1 {
		t.Fatalf("recorded %d, calls %d", len(recs), s.Calls())
	}
	r := recs[0]
	if r.Model != "m" || !r.Logprobs || r.TopLogprobs != 2 || r.N != 2 || r.Temperature == nil || *r.Temperature != 0.5 ||
		r.LastMessage() != "Evaluation Steps: be fair" {
		t.Errorf("recorded %+v", r)
	}
}

func TestNoLogprobsUnlessAsked(t *testing.T) {
	s := New(t)
	_, raw := post(t, s.URL(), "", body(nil))
	if !bytes.Contains(raw, []byte(`"logprobs":null`)) {
		t.Errorf("logprobs sent unasked: %s", raw)
	}
}

func TestAuthAndFaults(t *testing.T) {
	s := New(t, WithAPIKey("sk-good"))
	s.On(ContainsMessage("boom"), Reply{Status: 429, RetryAfter: "3", ErrorMessage: "slow down"})
	resp, raw := post(t, s.URL(), "sk-bad", body(nil))
	if resp.StatusCode != 401 || !bytes.Contains(raw, []byte("invalid_api_key")) || bytes.Contains(raw, []byte("sk-bad")) {
		t.Errorf("wrong key: %d %s", resp.StatusCode, raw)
	}
	resp, raw = post(t, s.URL(), "sk-good", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "boom"}}})
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !bytes.Contains(raw, []byte("slow down")) {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, raw)
	}
	resp, _ = post(t, s.URL(), "sk-good", map[string]any{"messages": []any{}})
	if resp.StatusCode != 400 {
		t.Errorf("bad request status %d", resp.StatusCode)
	}
	if s.Calls() != 3 {
		t.Errorf("calls = %d", s.Calls())
	}
}

func TestSequenceAndRules(t *testing.T) {
	seq := Sequence(Reply{Content: "a"}, Reply{Content: "b"})
	var got []string
	for range 4 {
		got = append(got, seq.ReplyTo(RecordedRequest{}).Content)
	}
	if strings.Join(got, "") != "abbb" {
		t.Errorf("sequence gave %v", got)
	}
	req := RecordedRequest{Model: "m", Messages: []abi.Message{{Role: "user", Content: "hello there"}}}
	if !All(Model("m"), ContainsMessage("hello"), LastMessageContains("there"), ResponseFormatType(""))(req) {
		t.Error("matchers rejected a matching request")
	}
	if ResponseFormatType("json_schema")(req) || Model("x")(req) {
		t.Error("matchers accepted a non-matching request")
	}
}

func TestTokens(t *testing.T) {
	for _, s := range []string{`{"reason": "It has 12 apples, and 3 pears.", "score": 10}`, "", "ünïcödé words 42!", "  double  space"} {
		toks := Tokens(s)
		if joinTokens(toks) != s {
			t.Errorf("Tokens(%q) spells %q", s, joinTokens(toks))
		}
		for _, tok := range toks {
			if tok.Logprob != 0 || len(tok.Top) != 1 || tok.Top[0].Token != tok.Token {
				t.Errorf("token %+v is not certain", tok)
			}
		}
	}
	toks := SplitScoreTokens(`score: `, []string{"1", "0"}, map[string]float64{"1": 0.8, "9": 0.2})
	n := len(toks)
	if toks[n-2].Token != "1" || toks[n-1].Token != "0" || len(toks[n-2].Top) != 2 || math.Abs(toks[n-2].Logprob-math.Log(0.8)) > 1e-12 {
		t.Errorf("split score tokens = %+v", toks[n-2:])
	}
	// The chosen token gets the remaining mass when not listed.
	tok := ScoreTokens("", "5", map[string]float64{"4": 0.25})[0]
	if math.Abs(tok.Logprob-math.Log(0.75)) > 1e-12 || tok.Top[0].Token != "5" {
		t.Errorf("unlisted score token = %+v", tok)
	}
}

func TestStartStandalone(t *testing.T) {
	s := NewServer(WithoutRecording())
	url, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasSuffix(url, "/v1") || s.URL() != url {
		t.Fatalf("URL = %q", url)
	}
	resp, raw := post(t, url, "", body(nil))
	if resp.StatusCode != 200 || !bytes.Contains(raw, []byte("default reply")) {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	if s.Calls() != 1 || len(s.Requests()) != 0 {
		t.Errorf("calls %d, recorded %d; want 1, 0", s.Calls(), len(s.Requests()))
	}
}

func TestFaultKnobs(t *testing.T) {
	tests := []struct {
		name   string
		reply  Reply
		status int
		has    string
		hasNot string
	}{
		{"no usage", Reply{Content: "ok", NoUsage: true}, 200, `"content":"ok"`, `"usage"`},
		{"truncated", Truncated(`{"a": `), 200, `"finish_reason":"length"`, ""},
		{"error in 200", ErrorIn200("boom"), 200, `"error":{"code":null,"message":"boom"`, `"choices"`},
		{"plain-text 503", PlainText(503, "overloaded"), 503, "overloaded", "{"},
		{"openai rejects json_schema", SchemaRejection(FlavorOpenAI), 400, "'response_format' of type 'json_schema' is not supported", ""},
		{"llama.cpp rejects json_schema", SchemaRejection(FlavorLlamaCpp), 400, `must be one of \"text\" or \"json_object\"`, ""},
		{"vllm rejects the schema", SchemaRejection(FlavorVLLM), 400, "JSON schema contains features not supported", ""},
		{"litellm drops response_format", SchemaRejection(FlavorLiteLLM), 400, "does not support parameters: ['response_format']", ""},
		{"pydantic 422", SchemaRejection(FlavorPydantic), 422, `"loc":["body","response_format","type"]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t)
			s.SetDefault(tc.reply)
			resp, raw := post(t, s.URL(), "", body(nil))
			if resp.StatusCode != tc.status || !bytes.Contains(raw, []byte(tc.has)) || (tc.hasNot != "" && bytes.Contains(raw, []byte(tc.hasNot))) {
				t.Errorf("status %d, body %s; want %d with %q and without %q", resp.StatusCode, raw, tc.status, tc.has, tc.hasNot)
			}
		})
	}
}

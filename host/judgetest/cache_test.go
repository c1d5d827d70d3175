package judgetest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Cache breakpoints are recorded where they are, checked as the API checks
// them; scripted cache reads and writes come back in usage, as parts of
// the input (input_tokens is what is left).
func TestAnthropicCacheControl(t *testing.T) {
	s := New(t, Anthropic())
	s.SetDefault(Reply{Content: "ok", Usage: &Usage{PromptTokens: 1000, CompletionTokens: 5, CachedTokens: 600, CacheWriteTokens: 300}})
	block := func(cc string) string {
		return `{"type":"text","text":"t","cache_control":` + cc + `}`
	}
	ok := `{"model":"m","max_tokens":5,"system":[` + block(`{"type":"ephemeral"}`) + `],"messages":[{"role":"user","content":[` + block(`{"type":"ephemeral","ttl":"1h"}`) + `]}]}`
	status, raw := anthropicCall(t, s, http.MethodPost, AnthropicMessagesPath, ok, true)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	if got := s.Requests()[0].CacheBreakpoints; strings.Join(got, " ") != "system.0 messages.0.content.0" {
		t.Errorf("breakpoints = %v", got)
	}
	var reply struct {
		Usage map[string]int `json:"usage"`
	}
	if err := json.Unmarshal([]byte(raw), &reply); err != nil {
		t.Fatal(err)
	}
	if u := reply.Usage; u["input_tokens"] != 100 || u["cache_read_input_tokens"] != 600 || u["cache_creation_input_tokens"] != 300 || u["output_tokens"] != 5 {
		t.Errorf("usage = %v", u)
	}

	five := strings.Repeat(block(`{"type":"ephemeral"}`)+",", 4) + block(`{"type":"ephemeral"}`)
	for name, body := range map[string]string{
		"not ephemeral":    `{"model":"m","max_tokens":5,"system":[` + block(`{"type":"persistent"}`) + `],"messages":[{"role":"user","content":"x"}]}`,
		"bad ttl":          `{"model":"m","max_tokens":5,"system":[` + block(`{"type":"ephemeral","ttl":"2h"}`) + `],"messages":[{"role":"user","content":"x"}]}`,
		"five breakpoints": `{"model":"m","max_tokens":5,"system":[` + five + `],"messages":[{"role":"user","content":"x"}]}`,
	} {
		if status, raw := anthropicCall(t, s, http.MethodPost, AnthropicMessagesPath, body, true); status != 400 || !strings.Contains(raw, "cache_control") {
			t.Errorf("%s: status %d, %s; want 400 naming cache_control", name, status, raw)
		}
	}
}

// OpenAI's cached tokens are usage.prompt_tokens_details.cached_tokens, a
// part of prompt_tokens; without any, the details are left out.
func TestOpenAICachedTokens(t *testing.T) {
	s := New(t)
	s.SetDefault(Reply{Content: "ok", Usage: &Usage{PromptTokens: 1000, CompletionTokens: 5, CachedTokens: 768}})
	_, raw := post(t, s.URL(), "", body(nil))
	var got wireCompletion
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if u := got.Usage; u == nil || u.PromptTokens != 1000 || u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens != 768 {
		t.Errorf("usage = %s", raw)
	}
	s.SetDefault(Reply{Content: "ok"})
	if _, raw := post(t, s.URL(), "", body(nil)); strings.Contains(string(raw), "prompt_tokens_details") {
		t.Errorf("details without cached tokens: %s", raw)
	}
}

package judgetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// AnthropicMessagesPath is the endpoint an Anthropic server answers.
const AnthropicMessagesPath = "/v1/messages"

// AnthropicVersion is the anthropic-version header the server requires.
const AnthropicVersion = "2023-06-01"

// Anthropic makes the server speak Anthropic's Messages API instead of
// OpenAI's: POST /v1/messages with the key (WithAPIKey) in x-api-key and
// anthropic-version 2023-06-01. It checks what the real API checks and
// refuses the rest in the API's error shape ({"type": "error", "error":
// {"type", "message"}}): an unknown top-level field (n, logprobs,
// response_format: "Extra inputs are not permitted"), a missing model,
// max_tokens or messages, streaming, a role other than user or assistant
// in messages, a first message not from the user, a temperature outside
// 0..1, a tool whose input_schema is not of type object, a tool_choice
// naming no tool, a cache_control not ephemeral or on more than four
// blocks (the blocks that carry one are recorded: CacheBreakpoints). Rules and replies work as for the OpenAI wire; a reply
// to a request forcing a tool (tool_choice {"type": "tool"}) whose Content
// is a JSON object comes back as that tool's tool_use block, any other
// Content as a text block. FinishReason "length" is stop_reason
// "max_tokens"; Refusal is stop_reason "refusal". The URL is the root (the
// SDK adds /v1/messages). The server speaks the Message Batches API too
// (anthropicbatch.go).
func Anthropic() Option { return func(s *Server) { s.anthropic = true } }

// anthropicToolName is the API's rule for tool names.
var anthropicToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

type anthropicRequest struct {
	Model       *string            `json:"model"`
	MaxTokens   *int               `json:"max_tokens"`
	Messages    []anthropicMessage `json:"messages"`
	System      json.RawMessage    `json:"system,omitempty"`
	Temperature *float64           `json:"temperature,omitempty"`
	Stream      *bool              `json:"stream,omitempty"`
	Tools       []struct {
		Name         string          `json:"name"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl *cacheControl   `json:"cache_control,omitempty"`
	} `json:"tools,omitempty"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name,omitempty"`
		DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
	} `json:"tool_choice,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
}

// cacheControl is a block's cache breakpoint.
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// maxCacheBreakpoints is how many blocks may carry cache_control.
const maxCacheBreakpoints = 4

// check is the API's rule for a breakpoint.
func (c *cacheControl) check() error {
	if c.Type != "ephemeral" {
		return fmt.Errorf("cache_control.type: Input should be 'ephemeral', got %q", c.Type)
	}
	if c.TTL != "" && c.TTL != "5m" && c.TTL != "1h" {
		return fmt.Errorf("cache_control.ttl: Input should be '5m' or '1h', got %q", c.TTL)
	}
	return nil
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	if r.Method != http.MethodPost || r.URL.Path != AnthropicMessagesPath {
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "Not Found")
		return
	}
	if !s.anthropicAuthorized(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "cannot read body: "+err.Error())
		return
	}
	req, toolName, err := parseAnthropic(body)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req.Header = r.Header.Clone()
	reply, done := s.begin(w, r, req)
	if done {
		return
	}
	switch {
	case reply.Status >= 400:
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeAnthropicError(w, reply.Status, anthropicErrorType(reply.Status), msg)
		return
	}
	writeJSON(w, statusOr(reply.Status, http.StatusOK), s.anthropicMessage(req, toolName, reply))
}

// anthropicAuthorized checks the headers every request needs: the key in
// x-api-key and anthropic-version; it answers as the API does if not.
func (s *Server) anthropicAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if s.apiKey != "" && r.Header.Get("X-Api-Key") != s.apiKey {
		msg := "invalid x-api-key"
		if s.echoKey {
			msg = "invalid x-api-key: " + r.Header.Get("X-Api-Key")
		}
		writeAnthropicError(w, http.StatusUnauthorized, "authentication_error", msg)
		return false
	}
	if v := r.Header.Get("Anthropic-Version"); v != AnthropicVersion {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("anthropic-version: %q is not a supported version; want %s", v, AnthropicVersion))
		return false
	}
	return true
}

// anthropicErrorType is the API's error type for an HTTP status.
func anthropicErrorType(status int) string {
	typ := map[int]string{429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error"}[status]
	if typ == "" {
		typ = "api_error"
		if status < 500 {
			typ = "invalid_request_error"
		}
	}
	return typ
}

// parseAnthropic checks a Messages request as the API does and records
// it; toolName is the tool the request forces, if any.
func parseAnthropic(body []byte) (RecordedRequest, string, error) {
	var w anthropicRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return RecordedRequest{}, "", fmt.Errorf("%s: Extra inputs are not permitted", strings.Trim(field, `"`))
		}
		return RecordedRequest{}, "", fmt.Errorf("invalid JSON body: %v", err)
	}
	switch {
	case w.Model == nil || *w.Model == "":
		return RecordedRequest{}, "", errors.New("model: Field required")
	case w.MaxTokens == nil:
		return RecordedRequest{}, "", errors.New("max_tokens: Field required")
	case *w.MaxTokens < 1:
		return RecordedRequest{}, "", errors.New("max_tokens: Input should be greater than or equal to 1")
	case len(w.Messages) == 0:
		return RecordedRequest{}, "", errors.New("messages: Field required")
	case w.Stream != nil && *w.Stream:
		return RecordedRequest{}, "", errors.New("stream: judgetest serves no streams, and the judge never asks for one")
	case w.Temperature != nil && (*w.Temperature < 0 || *w.Temperature > 1):
		return RecordedRequest{}, "", fmt.Errorf("temperature: Input should be less than or equal to 1")
	}
	req := RecordedRequest{Model: *w.Model, MaxTokens: *w.MaxTokens, Temperature: w.Temperature, N: 1,
		Body: append(json.RawMessage(nil), body...)}
	for i, t := range w.Tools {
		if t.CacheControl != nil {
			if err := t.CacheControl.check(); err != nil {
				return RecordedRequest{}, "", fmt.Errorf("tools.%d.%v", i, err)
			}
			req.CacheBreakpoints = append(req.CacheBreakpoints, fmt.Sprintf("tools.%d", i))
		}
	}
	if len(w.System) > 0 {
		text, marks, err := anthropicText(w.System)
		if err != nil {
			return RecordedRequest{}, "", fmt.Errorf("system: %v", err)
		}
		for _, k := range marks {
			req.CacheBreakpoints = append(req.CacheBreakpoints, fmt.Sprintf("system.%d", k))
		}
		req.Messages = append(req.Messages, abi.Message{Role: "system", Content: text})
	}
	for i, m := range w.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return RecordedRequest{}, "", fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && m.Role != "user" {
			return RecordedRequest{}, "", errors.New("messages: first message must use the \"user\" role")
		}
		text, marks, err := anthropicText(m.Content)
		if err != nil {
			return RecordedRequest{}, "", fmt.Errorf("messages.%d.content: %v", i, err)
		}
		for _, k := range marks {
			req.CacheBreakpoints = append(req.CacheBreakpoints, fmt.Sprintf("messages.%d.content.%d", i, k))
		}
		req.Messages = append(req.Messages, abi.Message{Role: m.Role, Content: text})
	}
	if n := len(req.CacheBreakpoints); n > maxCacheBreakpoints {
		return RecordedRequest{}, "", fmt.Errorf("A maximum of %d blocks with cache_control may be provided. Found %d.", maxCacheBreakpoints, n)
	}
	tools := map[string]bool{}
	for i, t := range w.Tools {
		if !anthropicToolName.MatchString(t.Name) {
			return RecordedRequest{}, "", fmt.Errorf("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema.Type != "object" {
			return RecordedRequest{}, "", fmt.Errorf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
		tools[t.Name] = true
	}
	toolName := ""
	if tc := w.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if !tools[tc.Name] {
				return RecordedRequest{}, "", fmt.Errorf("tool_choice: tool %q not found in tools", tc.Name)
			}
			toolName = tc.Name
		default:
			return RecordedRequest{}, "", fmt.Errorf("tool_choice.type: Input tag %q found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", tc.Type)
		}
	}
	req.ToolChoice = toolName
	return req, toolName, nil
}

// anthropicText reads content given as a string or as text blocks, and
// which blocks carry a cache breakpoint.
func anthropicText(raw json.RawMessage) (string, []int, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var blocks []struct {
		Type         string        `json:"type"`
		Text         string        `json:"text"`
		CacheControl *cacheControl `json:"cache_control"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, errors.New("Input should be a valid string or list of content blocks")
	}
	var b strings.Builder
	var marks []int
	for i, bl := range blocks {
		if bl.Type != "text" {
			return "", nil, fmt.Errorf("%d.type: only text blocks are served by judgetest, got %q", i, bl.Type)
		}
		if bl.CacheControl != nil {
			if err := bl.CacheControl.check(); err != nil {
				return "", nil, fmt.Errorf("%d.%v", i, err)
			}
			marks = append(marks, i)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), marks, nil
}

// anthropicMessage builds the Messages reply to req.
func (s *Server) anthropicMessage(req RecordedRequest, toolName string, reply Reply) map[string]any {
	content, _ := Choice{Content: reply.Content, Logprobs: reply.Logprobs}.text()
	var block map[string]any
	stop := "end_turn"
	var obj map[string]any
	if toolName != "" && json.Unmarshal([]byte(content), &obj) == nil {
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_judgetest_%d", s.ids.Add(1)), "name": toolName, "input": obj}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": content}
	}
	switch {
	case reply.FinishReason == "length":
		stop = "max_tokens"
	case reply.Refusal != "":
		stop = "refusal"
		block = map[string]any{"type": "text", "text": reply.Refusal}
	}
	in, out := 0, len(Tokens(content))
	for _, m := range req.Messages {
		in += 4 + len(m.Content)/4
	}
	cacheRead, cacheWrite := 0, 0
	if reply.Usage != nil {
		in, out = reply.Usage.PromptTokens, reply.Usage.CompletionTokens
		cacheRead, cacheWrite = reply.Usage.CachedTokens, reply.Usage.CacheWriteTokens
	}
	msg := map[string]any{
		"id":            fmt.Sprintf("msg_judgetest_%d", s.ids.Add(1)),
		"type":          "message",
		"role":          "assistant",
		"model":         req.Model,
		"content":       []any{block},
		"stop_reason":   stop,
		"stop_sequence": nil,
	}
	if !reply.NoUsage {
		msg["usage"] = map[string]any{"input_tokens": in - cacheRead - cacheWrite, "output_tokens": out,
			"cache_creation_input_tokens": cacheWrite, "cache_read_input_tokens": cacheRead}
	}
	return msg
}

// writeAnthropicError writes the API's error shape.
func writeAnthropicError(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}

package judge

import (
	"context"
	"encoding/json"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/packages/param"

	"github.com/agentanvil/anvil/abi"
)

// The judge encodes its chat-completion requests itself and hands openai-go
// the finished body (client.send): openai-go still sends it, with its
// headers, base URL, middleware and error handling, but its reflection-based
// encoder — every message a union whose MarshalJSON is re-compacted at each
// level — cost ~0.2 ms of CPU per call, more than the rest of the request
// path. The fields, their order and every byte are what openai-go makes of
// the same request (TestRequestBodiesAreOpenAIGos compares both on
// generated requests); a field the judge starts sending must be added here
// and to that test's reference (wire_reference_test.go).

// wireRequest is the chat-completion request body, fields in the order
// openai-go writes them (ChatCompletionNewParams' field order).
type wireRequest struct {
	Messages       []wireMessage       `json:"messages"`
	Model          string              `json:"model,omitempty"` // openai-go omits an empty model
	Logprobs       bool                `json:"logprobs,omitempty"`
	MaxTokens      int                 `json:"max_tokens,omitempty"`
	N              int                 `json:"n,omitempty"`
	Temperature    *float64            `json:"temperature,omitempty"`
	TopLogprobs    int                 `json:"top_logprobs,omitempty"`
	ResponseFormat *wireResponseFormat `json:"response_format,omitempty"`
}

// wireMessage is a system, user or assistant message with text content.
type wireMessage struct {
	Content string `json:"content"`
	Role    string `json:"role"`
}

type wireResponseFormat struct {
	JSONSchema *wireJSONSchema `json:"json_schema,omitempty"`
	Type       string          `json:"type"`
}

type wireJSONSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict,omitempty"`
	Schema json.RawMessage `json:"schema"`
}

// requestBody is the JSON body of the wire request of c under plan p, in
// structured-output mode (the plan's, or weaker once the server rejected
// it).
func (p *plan) requestBody(model string, c call, mode schemaMode) ([]byte, error) {
	msgs := p.messagesFor(c, mode)
	req := wireRequest{Model: model, Messages: make([]wireMessage, len(msgs)), Temperature: c.temperature}
	for i, m := range msgs {
		req.Messages[i] = wireMessage{Content: m.Content, Role: wireRole(m)}
	}
	if p.maxTokens > 0 {
		// max_tokens, not max_completion_tokens: every OpenAI-compatible
		// server understands it.
		req.MaxTokens = p.maxTokens
	}
	if c.n > 1 {
		req.N = c.n
	}
	if p.topLogprobs > 0 {
		req.Logprobs = true
		req.TopLogprobs = p.topLogprobs
	}
	if p.schema != nil {
		switch mode {
		case modeJSONSchema:
			req.ResponseFormat = &wireResponseFormat{Type: "json_schema",
				JSONSchema: &wireJSONSchema{Name: p.schemaName, Strict: p.strict, Schema: p.schema.canonical}}
		case modeJSONObject:
			req.ResponseFormat = &wireResponseFormat{Type: "json_object"}
		}
	}
	return json.Marshal(&req)
}

// wireRole is the role m is sent as: system and assistant as they are,
// anything else as user.
func wireRole(m abi.Message) string {
	switch m.Role {
	case "system", "assistant":
		return m.Role
	}
	return "user"
}

// presetBody stands in for the request openai-go would encode: the body is
// already made (option.WithRequestBody replaces it), so openai-go's encoder
// has only "{}" to write. A raw body passed through param.Override would
// still be re-compacted byte by byte, which cost as much as encoding it.
var presetBody = param.Override[openai.ChatCompletionNewParams](json.RawMessage("{}"))

// send makes one chat-completion request with body through openai-go
// (its base URL, headers, middleware and error handling).
func (cl *client) send(ctx context.Context, body []byte, opts ...option.RequestOption) error {
	opts = append(opts, option.WithRequestBody("application/json", body))
	_, err := cl.chat.New(ctx, presetBody, opts...)
	return err
}

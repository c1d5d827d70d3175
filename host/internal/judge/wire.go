package judge

import (
	"context"

	"github.com/openai/openai-go/v3/option"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

// The judge encodes its chat-completion requests itself (openaiwire) and
// hands openai-go the finished body (client.send): openai-go still sends
// it, with its headers, base URL, middleware and error handling, but its
// reflection-based encoder — every message a union whose MarshalJSON is
// re-compacted at each level — cost more CPU than the rest of the request
// path. The fields, their order and every byte are what openai-go makes of
// the same request (TestRequestBodiesAreOpenAIGos compares both on
// generated requests).

// requestBody is the JSON body of the wire request of c under plan p, in
// structured-output mode (the plan's, or weaker once the server rejected
// it). It fails for what JSON cannot say: a temperature that is not
// finite.
func (p *plan) requestBody(model string, c call, mode schemaMode) ([]byte, error) {
	msgs := p.messagesFor(c, mode)
	req := openaiwire.Request{Model: model, Messages: make([]openaiwire.Message, len(msgs)), Temperature: c.temperature}
	for i, m := range msgs {
		req.Messages[i] = openaiwire.Message{Content: m.Content, Role: wireRole(m)}
	}
	if p.maxTokens > 0 {
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
			req.ResponseFormat = &openaiwire.ResponseFormat{Type: "json_schema",
				JSONSchema: &openaiwire.JSONSchema{Name: p.schemaName, Strict: p.strict, Schema: p.schema.canonical}}
		case modeJSONObject:
			req.ResponseFormat = &openaiwire.ResponseFormat{Type: "json_object"}
		}
	}
	return req.Encode()
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

// send makes one chat-completion request with body through openai-go
// (its base URL, headers, middleware and error handling).
func (o *openaiProvider) send(ctx context.Context, body []byte, opts ...option.RequestOption) error {
	// openai-go sends a []byte body as it is, as application/json.
	return o.api.Post(ctx, chatCompletionsPath, body, nil, opts...)
}

// chatCompletionsPath is ChatCompletionService.New's path.
const chatCompletionsPath = "chat/completions"

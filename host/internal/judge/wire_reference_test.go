package judge

import (
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// The request as openai-go's own types build it: what the judge sent
// before it encoded requests itself (wire.go), kept as the reference its
// encoder must match byte for byte (TestRequestBodiesAreOpenAIGos).

// typedParams builds the wire request of c under plan p, in structured-output
// mode (the plan's, or weaker once the server rejected it).
func (p *plan) typedParams(model string, c call, mode schemaMode) openai.ChatCompletionNewParams {
	msgs := p.messagesFor(c, mode)
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(model),
		Messages: make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)),
	}
	for _, m := range msgs {
		switch m.Role {
		case "system":
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case "assistant":
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		}
	}
	if c.temperature != nil {
		params.Temperature = openai.Float(*c.temperature)
	}
	if p.maxTokens > 0 {
		// max_tokens, not max_completion_tokens: every OpenAI-compatible
		// server understands it.
		params.MaxTokens = openai.Int(int64(p.maxTokens))
	}
	if c.n > 1 {
		params.N = openai.Int(int64(c.n))
	}
	if p.topLogprobs > 0 {
		params.Logprobs = openai.Bool(true)
		params.TopLogprobs = openai.Int(int64(p.topLogprobs))
	}
	if p.schema != nil {
		switch mode {
		case modeJSONSchema:
			js := shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   p.schemaName,
				Schema: rawJSON(p.schema.canonical),
			}
			if p.strict {
				js.Strict = openai.Bool(true)
			}
			params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
				OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js},
			}
		case modeJSONObject:
			params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
				OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
			}
		}
	}
	return params
}

// rawJSON marshals as itself, so the schema goes on the wire verbatim.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

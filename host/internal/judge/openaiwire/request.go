package openaiwire

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Request is a chat-completion request body, its fields in the order
// openai-go writes them (ChatCompletionNewParams' field order) and omitted
// where openai-go omits them. A field the judge starts sending is added
// here and to the reference in the judge's tests
// (TestRequestBodiesAreOpenAIGos).
type Request struct {
	Messages []Message `json:"messages"`
	// Model is omitted when empty, as openai-go omits it.
	Model    string `json:"model,omitempty"`
	Logprobs bool   `json:"logprobs,omitzero"`
	// MaxTokens, not max_completion_tokens: every OpenAI-compatible
	// server understands it.
	MaxTokens      int             `json:"max_tokens,omitzero"`
	N              int             `json:"n,omitzero"`
	Temperature    *float64        `json:"temperature,omitzero"`
	TopLogprobs    int             `json:"top_logprobs,omitzero"`
	ResponseFormat *ResponseFormat `json:"response_format,omitzero"`
}

// Message is a system, user or assistant message with text content.
type Message struct {
	Content string `json:"content"`
	Role    string `json:"role"`
}

// ResponseFormat is response_format: json_schema with JSONSchema, or
// json_object.
type ResponseFormat struct {
	JSONSchema *JSONSchema `json:"json_schema,omitzero"`
	Type       string      `json:"type"`
}

// JSONSchema is response_format.json_schema.
type JSONSchema struct {
	Name   string         `json:"name"`
	Strict bool           `json:"strict,omitzero"`
	Schema jsontext.Value `json:"schema"`
}

// encodeOptions write strings as openai-go v3 writes them (its fork of
// encoding/json, HTML escaping off): the JavaScript line separators
// escaped, "<", ">" and "&" as they are, and invalid UTF-8 replaced with
// U+FFFD rather than refused, so a prompt with a stray byte is sent as
// openai-go would send it.
var encodeOptions = json.JoinOptions(
	jsontext.EscapeForHTML(false),
	jsontext.EscapeForJS(true),
	jsontext.AllowInvalidUTF8(true),
)

// Encode is r's JSON body. It fails for what JSON cannot say: a
// temperature that is not finite, a schema that is not one JSON value.
func (r *Request) Encode() ([]byte, error) {
	return json.Marshal(r, encodeOptions)
}

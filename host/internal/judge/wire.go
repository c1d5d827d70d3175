package judge

import (
	"context"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/openai/openai-go/option"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonw"
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
//
// requestBody writes json.Marshal's bytes for wireRequest by hand
// (appendjson.go): json.Marshal re-compacted the schema and escaped the
// prompt a byte at a time on every call, and the cache key escaped the
// prompt again. wireRequest stays as what it must match (FuzzWireBody,
// TestEncodedTypesKnown), and as the encoder of what encoding/json
// refuses, for its error.

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

// wireText is what a plan's encodings share, made once per plan (resolve)
// and read-only after, as concurrent samples encode their bodies from it:
// each request message's content as json.Marshal writes it, for the cache
// key and every body (retries, repairs, weaker modes), and the schema as
// json.Marshal writes a json.RawMessage.
type wireText struct {
	// contents holds the quoted contents one after another, message i's
	// ending at end(i): the first four ends are in the struct, sparing an
	// allocation for the few messages a request has.
	contents []byte
	ends     [4]int
	moreEnds []int
	// schema is nil when the plan has none or when schemaOK is false:
	// encoding/json then says why it does not encode.
	schema   []byte
	schemaOK bool
}

// newWireText escapes p's messages and schema.
func (p *plan) newWireText() *wireText {
	n := 0
	for _, m := range p.req.Messages {
		n += len(m.Content) + 2
	}
	// Room for an escape (up to 5 more bytes) every 20 bytes.
	w := &wireText{contents: make([]byte, 0, n+n/4+16)}
	if len(p.req.Messages) > len(w.ends) {
		w.moreEnds = make([]int, len(p.req.Messages)-len(w.ends))
	}
	for i, m := range p.req.Messages {
		w.contents = jsonw.AppendString(w.contents, m.Content)
		if i < len(w.ends) {
			w.ends[i] = len(w.contents)
		} else {
			w.moreEnds[i-len(w.ends)] = len(w.contents)
		}
	}
	if p.schema != nil {
		w.schema, w.schemaOK = rawJSONForm(p.schema.canonical)
	}
	return w
}

// end is where message i's content ends in contents.
func (w *wireText) end(i int) int {
	if i < len(w.ends) {
		return w.ends[i]
	}
	return w.moreEnds[i-len(w.ends)]
}

// content is message i's content, quoted.
func (w *wireText) content(i int) []byte {
	start := 0
	if i > 0 {
		start = w.end(i - 1)
	}
	return w.contents[start:w.end(i)]
}

// appendContent appends s, the content of message i of what p sends,
// quoted. The request's own messages are escaped already when resolve
// made p's wire text; one that extends a request message (the schema
// instruction added to the last user message) reuses that message's
// escaping, as a rune never spans an ASCII byte (appendStringBody).
func (p *plan) appendContent(dst []byte, i int, s string) []byte {
	if w := p.wire; w != nil && i < len(p.req.Messages) {
		orig := p.req.Messages[i].Content
		if s == orig {
			return append(dst, w.content(i)...)
		}
		if len(s) > len(orig) && s[len(orig)] < utf8.RuneSelf && s[:len(orig)] == orig {
			q := w.content(i)
			dst = append(dst, q[:len(q)-1]...)
			dst = jsonw.AppendStringBody(dst, s[len(orig):])
			return append(dst, '"')
		}
	}
	return jsonw.AppendString(dst, s)
}

// contentSize is about what appendContent appends: exactly for a request
// message escaped already, else with room for an escape every 20 bytes.
func (p *plan) contentSize(i int, s string) int {
	if w := p.wire; w != nil && i < len(p.req.Messages) && len(s) >= len(p.req.Messages[i].Content) {
		added := len(s) - len(p.req.Messages[i].Content)
		return len(w.content(i)) + added + added/4
	}
	return len(s) + len(s)/4 + 2
}

// schemaForm is p's schema as json.Marshal writes it; ok is false when
// encoding/json is left to say why it does not encode.
func (p *plan) schemaForm() (form []byte, ok bool) {
	if p.wire != nil {
		return p.wire.schema, p.wire.schemaOK
	}
	return rawJSONForm(p.schema.canonical)
}

// requestBody is the JSON body of the wire request of c under plan p, in
// structured-output mode (the plan's, or weaker once the server rejected
// it): json.Marshal's bytes for wireRequest, written by hand. What
// encoding/json refuses (a temperature that is not finite, a schema that
// is not JSON) is left to it, for its error.
func (p *plan) requestBody(model string, c call, mode schemaMode) ([]byte, error) {
	if c.temperature != nil && !jsonw.Finite(*c.temperature) {
		return p.marshalRequest(model, c, mode)
	}
	var schema []byte
	if p.schema != nil && mode == modeJSONSchema {
		var ok bool
		if schema, ok = p.schemaForm(); !ok {
			return p.marshalRequest(model, c, mode)
		}
	}
	msgs := p.messagesFor(c, mode)
	size := len(model) + len(p.schemaName) + len(schema) + 256
	for i, m := range msgs {
		size += 32 + p.contentSize(i, m.Content)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"content":`...)
		b = p.appendContent(b, i, m.Content)
		b = append(b, `,"role":"`...)
		b = append(b, wireRole(m)...)
		b = append(b, `"}`...)
	}
	b = append(b, ']')
	if model != "" {
		b = append(b, `,"model":`...)
		b = jsonw.AppendString(b, model)
	}
	if p.topLogprobs > 0 {
		b = append(b, `,"logprobs":true`...)
	}
	if p.maxTokens > 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(p.maxTokens), 10)
	}
	if c.n > 1 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(c.n), 10)
	}
	if c.temperature != nil {
		b = append(b, `,"temperature":`...)
		b = jsonw.AppendFloat(b, *c.temperature)
	}
	if p.topLogprobs > 0 {
		b = append(b, `,"top_logprobs":`...)
		b = strconv.AppendInt(b, int64(p.topLogprobs), 10)
	}
	if p.schema != nil {
		switch mode {
		case modeJSONSchema:
			b = append(b, `,"response_format":{"json_schema":{"name":`...)
			b = jsonw.AppendString(b, p.schemaName)
			if p.strict {
				b = append(b, `,"strict":true`...)
			}
			b = append(b, `,"schema":`...)
			b = append(b, schema...)
			b = append(b, `},"type":"json_schema"}`...)
		case modeJSONObject:
			b = append(b, `,"response_format":{"type":"json_object"}`...)
		}
	}
	return append(b, '}'), nil
}

// marshalRequest is requestBody by encoding/json, from wireRequest: the
// reference the hand-written encoder matches (FuzzWireBody), and the
// encoder of what it leaves to encoding/json.
func (p *plan) marshalRequest(model string, c call, mode schemaMode) ([]byte, error) {
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

// send makes one chat-completion request with body through openai-go
// (its base URL, headers, middleware and error handling).
func (cl *client) send(ctx context.Context, body []byte, opts ...option.RequestOption) error {
	// openai-go sends a []byte body as it is, as application/json.
	return cl.api.Post(ctx, chatCompletionsPath, body, nil, opts...)
}

// chatCompletionsPath is ChatCompletionService.New's path.
const chatCompletionsPath = "chat/completions"

package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
	"github.com/agentanvil/anvil/host/internal/stall"
)

// anthropicProvider is Anthropic's Messages API through anthropic-sdk-go.
// The request is the SDK's MessageNewParams, marshalled by the SDK once per
// call (retries resend the bytes) and sent by the SDK's client (its
// x-api-key and anthropic-version headers, base URL, middleware and error
// handling); the reply is read raw and decoded strictly here, as the
// OpenAI wire's is, so an untrusted server's mistyped field or repeated
// name is an unparseable reply rather than a zero.
//
// The system prompt carries a cache breakpoint (cache_control ephemeral),
// so the static prefix of a metric's prompts — the tool, the system
// prompt — is read from Anthropic's prompt cache after the first call.
//
// What the API has not, the judge does around it: structured output is a
// tool whose input_schema is the request's schema, forced by tool_choice
// (a schema whose top level is not an object travels in the prompt
// instead); there are no logprobs, so a score is read as written or, with
// samples, from separate sampled calls (one reply per call: no n);
// max_tokens is required, so a request without one is sent
// anthropicDefaultMaxTokens.
//
// go.mod holds the SDK at a release before the beta API surfaces grew its
// one root package several times over: the host compiles all of it for
// one endpoint, on README's cold first build (RATIONALE.md). A newer
// release is a decision to measure, as TestBuildBudget says.
type anthropicProvider struct {
	api   anthropic.Client
	model string
}

// anthropicDefaultMaxTokens caps a reply when neither the request nor the
// judge's config does: the API requires a cap, and a judge's verdict is
// far below this one.
const anthropicDefaultMaxTokens = 4096

// anthropicMessagesPath is MessageService.New's path.
const anthropicMessagesPath = "v1/messages"

func newAnthropicProvider(cfg Config, httpClient *http.Client, apiKey string, headers http.Header) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0),
		// The per-attempt timeout is the judge's (a context deadline); a
		// request timeout of the same length also keeps the SDK from
		// refusing a large max_tokens without streaming.
		option.WithRequestTimeout(cfg.Timeout.Std()),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := stall.Exchange(r, next)
			limitBody(resp, maxReplyBytes)
			return resp, err
		}),
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	for name, values := range headers {
		for _, v := range values {
			opts = append(opts, option.WithHeader(name, v))
		}
	}
	// Not anthropic.NewClient: it reads ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL,
	// profiles and federation settings that the judge's config decides.
	return &anthropicProvider{api: anthropic.Client{Options: slices.Clip(opts)}, model: cfg.Model}
}

func (a *anthropicProvider) encode(p *plan, c call, mode schemaMode) ([]byte, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(a.model),
		MaxTokens: int64(p.maxTokens),
	}
	if params.MaxTokens == 0 {
		params.MaxTokens = anthropicDefaultMaxTokens
	}
	if c.temperature != nil {
		params.Temperature = anthropic.Float(*c.temperature)
	}
	var system []string
	for _, m := range p.messagesFor(c, mode) {
		role := wireRole(m)
		if role == "system" {
			system = append(system, m.Content)
			continue
		}
		// Consecutive messages of one role are one turn.
		if n := len(params.Messages); n > 0 && string(params.Messages[n-1].Role) == role {
			params.Messages[n-1].Content = append(params.Messages[n-1].Content, anthropic.NewTextBlock(m.Content))
			continue
		}
		if role == "assistant" {
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		} else {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		}
	}
	if len(system) > 0 {
		// The system prompt is the static prefix (kinds put what is the
		// same for every case there, the case after it): a cache
		// breakpoint at its end lets every later call of the metric read
		// the tool and the system prompt from Anthropic's prompt cache. A
		// prefix shorter than the model's minimum is not cached and costs
		// nothing more.
		params.System = []anthropic.TextBlockParam{{Text: strings.Join(system, "\n\n"),
			CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	if p.schema != nil && mode == modeJSONSchema {
		schema, err := toolInputSchema(p.schema.canonical)
		if err != nil {
			return nil, err
		}
		params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        p.schemaName,
			Description: anthropic.String("Record the response. Its input is the whole response, as the schema says."),
			InputSchema: schema,
		}}}
		params.ToolChoice = anthropic.ToolChoiceParamOfTool(p.schemaName)
	}
	return params.MarshalJSON()
}

// toolSchema says whether a canonical JSON Schema can be a tool's
// input_schema: the API takes only an object schema ({"type": "object"}).
func toolSchema(canonical []byte) bool {
	var top struct {
		Type jsontext.Value `json:"type"`
	}
	return json.Unmarshal(canonical, &top) == nil && string(top.Type) == `"object"`
}

// toolInputSchema is the request's schema as the SDK's input_schema:
// properties and required in their fields, every other keyword as it is.
func toolInputSchema(canonical []byte) (anthropic.ToolInputSchemaParam, error) {
	var fields map[string]jsontext.Value
	if err := json.Unmarshal(canonical, &fields); err != nil {
		return anthropic.ToolInputSchemaParam{}, fmt.Errorf("schema as a tool's input_schema: %w", err)
	}
	var s anthropic.ToolInputSchemaParam
	for k, v := range fields {
		switch k {
		case "type":
		case "properties":
			s.Properties = schemaJSON(v)
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return s, fmt.Errorf("schema's required: %w", err)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = schemaJSON(v)
		}
	}
	return s, nil
}

// schemaJSON is JSON the SDK's encoder writes as it is.
type schemaJSON []byte

func (r schemaJSON) MarshalJSON() ([]byte, error) { return r, nil }

func (a *anthropicProvider) attempt(ctx context.Context, body []byte, _ openaiwire.Need) (completion, *failure, *http.Response, error) {
	var httpResp, bodyResp *http.Response
	err := a.api.Post(ctx, anthropicMessagesPath, body, nil, option.WithResponseInto(&httpResp), option.WithResponseBodyInto(&bodyResp))
	if err != nil {
		return completion{}, nil, httpResp, err
	}
	reply, done, err := readReply(httpResp)
	if err != nil {
		return completion{}, nil, httpResp, err
	}
	defer done()
	c, f := decodeAnthropic(httpResp.Header.Get("Content-Type"), reply)
	if f != nil {
		f.status = statusOf(httpResp)
	}
	return c, f, nil, nil
}

// anthropicReply is what the judge reads of a Messages reply. Other
// fields are passed over (the API adds them); those read are decoded
// strictly.
type anthropicReply struct {
	Type       string           `json:"type"`
	Content    []anthropicBlock `json:"content"`
	StopReason string           `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	Error jsontext.Value `json:"error"`
}

type anthropicBlock struct {
	Type  string         `json:"type"`
	Text  string         `json:"text"`
	Name  string         `json:"name"`
	Input jsontext.Value `json:"input"`
}

// maxTokenCount bounds a token count read from a reply: far above any
// real request, far below an int's overflow when three are summed.
const maxTokenCount = 1 << 40

// errNotMessage is a 2xx body that is JSON but not a message.
var errNotMessage = errors.New("not a message")

// decodeAnthropic reads a 2xx Messages body into a completion of one
// choice: the text blocks, or the forced tool's input as JSON text (the
// structured reply). stop_reason max_tokens (and a full context window) is
// finish_reason "length"; refusal is a refusal.
func decodeAnthropic(contentType string, body []byte) (completion, *failure) {
	if f := notJSON(contentType, body); f != nil {
		return completion{}, f
	}
	var r anthropicReply
	err := json.Unmarshal(body, &r)
	switch {
	case err == nil && (r.Type == "error" || len(r.Error) > 0):
		return completion{}, &failure{kind: failErrorBody, detail: serverWords(body)}
	case err == nil && r.Type != "message":
		err = fmt.Errorf("%w: type %q", errNotMessage, r.Type)
	}
	if err != nil {
		return completion{}, &failure{kind: failUnparseable, detail: withWords("the body is not a message: "+err.Error(), body)}
	}
	var text, tool strings.Builder
	hasTool := false
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if !hasTool && len(b.Input) > 0 {
				hasTool = true
				compact := b.Input.Clone()
				if err := compact.Compact(); err == nil {
					tool.Write(compact)
				} else {
					tool.Write(b.Input)
				}
			}
		}
	}
	ch := choice{content: text.String(), finishReason: "stop"}
	if hasTool {
		ch.content = tool.String()
	}
	switch r.StopReason {
	case "max_tokens", "model_context_window_exceeded":
		ch.finishReason = "length"
	case "refusal":
		ch.refusal = ch.content
		if ch.refusal == "" {
			ch.refusal = "(stop_reason refusal, no text)"
		}
		ch.content = ""
	}
	c := completion{choices: []choice{ch}}
	if u := r.Usage; u != nil && (u.InputTokens > 0 || u.OutputTokens > 0 || u.CacheReadInputTokens > 0 || u.CacheCreationInputTokens > 0) {
		// input_tokens is only the input after the last cache breakpoint:
		// the whole input is the three together.
		// Each count is bounded so that an untrusted server's three huge
		// counts cannot overflow their sum into a negative cost.
		count := func(n int) int { return min(max(n, 0), maxTokenCount) }
		cached, written := count(u.CacheReadInputTokens), count(u.CacheCreationInputTokens)
		c.inputTokens = count(u.InputTokens) + cached + written
		c.cachedInputTokens, c.cacheWriteInputTokens = cached, written
		c.outputTokens = max(u.OutputTokens, 0)
		c.usageKnown = true
	}
	return c, nil
}

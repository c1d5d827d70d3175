package judge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/shared"

	"github.com/agentanvil/anvil/abi"
)

// call is one upstream chat completion the judge wants made.
type call struct {
	messages    []abi.Message
	n           int
	temperature *float64
}

// choice is one generated reply.
type choice struct {
	content string
	refusal string
	tokens  []abi.TokenLogprob
}

// completion is a successful upstream reply.
type completion struct {
	choices      []choice
	inputTokens  int
	outputTokens int
}

// client is the bottom of the stack: one HTTP attempt through openai-go.
type client struct {
	chat openai.ChatCompletionService
}

func newClient(cfg Config, httpClient *http.Client, apiKey string) *client {
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(httpClient),
		// Our retry layer is the only one, so attempts are counted and
		// backoff is observable.
		option.WithMaxRetries(0),
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	// openai-go appends per-request options to the service's slice; with
	// spare capacity, concurrent calls would write into one shared array.
	// Clipping makes every append copy.
	return &client{chat: openai.NewChatCompletionService(slices.Clip(opts)...)}
}

// params builds the wire request of c under plan p.
func (p *plan) params(model string, c call) openai.ChatCompletionNewParams {
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(model),
		Messages: make([]openai.ChatCompletionMessageParamUnion, 0, len(c.messages)),
	}
	for _, m := range c.messages {
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
		switch p.mode {
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

// failureKind classifies a failed attempt.
type failureKind int

const (
	failAuth        failureKind = iota // 401
	failForbidden                      // 403
	failNotFound                       // 404
	failRejected                       // other 4xx: the request itself is wrong
	failRateLimited                    // 429
	failServer                         // 5xx, 408
	failTimeout                        // the per-attempt timeout passed
	failUnreachable                    // connection refused, reset, DNS, TLS
	failUnparseable                    // 2xx with a body that is not a chat completion
	failCancelled                      // the caller's context ended
)

// failure is one failed attempt, classified.
type failure struct {
	kind   failureKind
	status int
	// retryAfter is what the server asked us to wait (0: it did not say).
	retryAfter    time.Duration
	hasRetryAfter bool
	detail        string
}

func (f *failure) retryable() bool {
	switch f.kind {
	case failRateLimited, failServer, failTimeout, failUnreachable:
		return true
	}
	return false
}

// attempt makes one HTTP request and classifies the outcome.
func (j *Judge) attempt(ctx context.Context, params openai.ChatCompletionNewParams) (completion, *failure) {
	var httpResp *http.Response
	// openai-go builds and sends the request; the reply is decoded into
	// wireCompletion with encoding/json, which reads only what the judge
	// uses. openai-go's own decoder costs ~6x the CPU on a reply with
	// top_logprobs (20 alternatives per token), which made it the largest
	// host cost per call (bench/README.md).
	var wire wireCompletion
	_, err := j.client.chat.New(ctx, params, option.WithResponseInto(&httpResp), option.WithResponseBodyInto(&wire))
	if err == nil {
		if len(wire.Choices) == 0 {
			return completion{}, &failure{kind: failUnparseable, status: statusOf(httpResp), detail: "the reply has no choices"}
		}
		return wire.completion(), nil
	}
	return completion{}, j.classify(ctx, httpResp, err)
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

func (j *Judge) classify(ctx context.Context, httpResp *http.Response, err error) *failure {
	status := statusOf(httpResp)
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && status == 0 {
		status = apiErr.StatusCode
	}
	if status >= 400 {
		f := &failure{status: status}
		if apiErr != nil {
			f.detail = apiErr.Message
		}
		if httpResp != nil {
			f.retryAfter, f.hasRetryAfter = retryAfter(httpResp.Header, j.clock.Now())
		}
		switch {
		case status == http.StatusUnauthorized:
			f.kind = failAuth
		case status == http.StatusForbidden:
			f.kind = failForbidden
		case status == http.StatusNotFound:
			f.kind = failNotFound
		case status == http.StatusTooManyRequests:
			f.kind = failRateLimited
		case status == http.StatusRequestTimeout || status >= 500:
			f.kind = failServer
		default:
			f.kind = failRejected
		}
		return f
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The retry layer tells a per-attempt timeout from the caller's
		// cancellation; here both look like a context error.
		if errors.Is(ctx.Err(), context.Canceled) {
			return &failure{kind: failCancelled, detail: "cancelled"}
		}
		return &failure{kind: failTimeout, detail: "timed out"}
	}
	if httpResp != nil {
		// The server answered 2xx, but not with a chat completion.
		return &failure{kind: failUnparseable, status: status, detail: unparseableDetail(httpResp, err)}
	}
	return &failure{kind: failUnreachable, detail: transportDetail(err)}
}

func unparseableDetail(r *http.Response, err error) string {
	ct := r.Header.Get("Content-Type")
	if ct != "" && !strings.Contains(ct, "json") {
		return fmt.Sprintf("the body is %s, not JSON", ct)
	}
	return err.Error()
}

// transportDetail drops the method and URL net/http puts in front of a
// transport error; the judge's message names the base URL once.
func transportDetail(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		// "dial tcp: connect: connection refused", without the address.
		return strings.TrimSpace(oe.Op+" "+oe.Net) + ": " + oe.Err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// wireCompletion is the part of a chat completion the judge reads.
type wireCompletion struct {
	Choices []wireChoice `json:"choices"`
	Usage   struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

type wireChoice struct {
	Index   int `json:"index"`
	Message struct {
		Content string `json:"content"`
		Refusal string `json:"refusal"`
	} `json:"message"`
	Logprobs *struct {
		Content []wireToken `json:"content"`
	} `json:"logprobs"`
}

type wireToken struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

func (w *wireCompletion) completion() completion {
	c := completion{
		inputTokens:  w.Usage.PromptTokens,
		outputTokens: w.Usage.CompletionTokens,
		choices:      make([]choice, 0, len(w.Choices)),
	}
	// Servers need not return choices in index order.
	ordered := slices.Clone(w.Choices)
	slices.SortStableFunc(ordered, func(a, b wireChoice) int { return a.Index - b.Index })
	for _, ch := range ordered {
		var tokens []wireToken
		if ch.Logprobs != nil {
			tokens = ch.Logprobs.Content
		}
		c.choices = append(c.choices, choice{
			content: ch.Message.Content,
			refusal: ch.Message.Refusal,
			tokens:  toTokens(tokens),
		})
	}
	return c
}

func toTokens(in []wireToken) []abi.TokenLogprob {
	if len(in) == 0 {
		return nil
	}
	out := make([]abi.TokenLogprob, len(in))
	for i, t := range in {
		out[i] = abi.TokenLogprob{Token: t.Token, Logprob: t.Logprob}
		if len(t.TopLogprobs) > 0 {
			out[i].Top = make([]abi.TopLogprob, len(t.TopLogprobs))
			for k, alt := range t.TopLogprobs {
				out[i].Top[k] = abi.TopLogprob{Token: alt.Token, Logprob: alt.Logprob}
			}
		}
	}
	return out
}

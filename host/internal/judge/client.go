package judge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
	"github.com/agentanvil/anvil/host/internal/stall"
)

// call is one upstream chat completion the judge wants made: the plan's
// messages followed by extra (a repair's bad reply and instruction).
type call struct {
	extra       []abi.Message
	n           int
	temperature *float64
}

// choice is one generated reply.
type choice struct {
	content      string
	refusal      string
	finishReason string
	tokens       []abi.TokenLogprob
}

// completion is a successful upstream reply.
type completion struct {
	choices      []choice
	inputTokens  int
	outputTokens int
	// cachedInputTokens of inputTokens were read from the provider's
	// prompt cache (OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens), cacheWriteInputTokens written
	// to it (Anthropic's cache_creation_input_tokens).
	cachedInputTokens     int
	cacheWriteInputTokens int
	// usageKnown is false when the reply had no usage block: the token
	// counts are then the judge's estimates.
	usageKnown bool
	// batched says the reply came through a batch, at the batch price.
	batched bool
	// raw is a batch line's reply body, not yet decoded (batch.go).
	raw []byte
}

// openaiProvider is the OpenAI chat-completions wire (provider openai, and
// azure through openai-go's Azure options): one HTTP attempt through
// openai-go (its base URL, headers, middleware, request building and error
// handling). Not through ChatCompletionService.New, whose typed params
// openai-go marshals (by reflection, 5 µs a call) before an option
// replaces the body: the body is the judge's own (wire.go), and the
// client's generic Post takes it as it is — what New would send, header
// for header (TestRequestBodiesAreOpenAIGos).
type openaiProvider struct {
	api openai.Client
	// model is what the body names: the model, or for Azure the
	// deployment (which openai-go's Azure middleware puts in the path).
	model string
	// azure: the judge's provider is Azure OpenAI.
	azure bool
}

func newOpenAIProvider(cfg Config, httpClient *http.Client, apiKey string, headers http.Header) *openaiProvider {
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(httpClient),
		// Our retry layer is the only one, so attempts are counted and
		// backoff is observable.
		option.WithMaxRetries(0),
		option.WithMiddleware(limitReplyBody(maxReplyBytes)),
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	opts = append(opts, headerOptions(headers)...)
	// openai-go appends per-request options to the service's slice; with
	// spare capacity, concurrent calls would write into one shared array.
	// Clipping makes every append copy.
	// Not openai.NewClient: it would add options from the environment
	// (OPENAI_API_KEY, OPENAI_ORG_ID, …) that the judge's config decides.
	return &openaiProvider{api: openai.Client{Options: slices.Clip(opts)}, model: cfg.Model}
}

// headerOptions set the configured headers, after the key: a header the
// config names (a gateway's Authorization) wins.
func headerOptions(h http.Header) []option.RequestOption {
	var opts []option.RequestOption
	for name, values := range h {
		for _, v := range values {
			opts = append(opts, option.WithHeader(name, v))
		}
	}
	return opts
}

func (o *openaiProvider) encode(p *plan, c call, mode schemaMode) ([]byte, error) {
	return p.requestBody(o.model, c, mode)
}

func (o *openaiProvider) attempt(ctx context.Context, body []byte, need openaiwire.Need) (completion, *failure, *http.Response, error) {
	var httpResp *http.Response
	// openai-go sends the request (its body encoded by the judge, see
	// wire.go); the body comes back raw and is decoded by openaiwire into
	// only what the judge uses (decodeCompletion): openai-go's own decoder
	// decodes every alternative of every token through reflection, which
	// cost more CPU than the rest of the call (bench/README.md), and the
	// raw body keeps the server's words when it is not a completion.
	// The body is left to us (a **http.Response destination) and read into
	// a pooled buffer.
	var bodyResp *http.Response
	err := o.send(ctx, body, option.WithResponseInto(&httpResp), option.WithResponseBodyInto(&bodyResp))
	if err != nil {
		return completion{}, nil, httpResp, err
	}
	reply, done, err := readReply(httpResp)
	if err != nil {
		return completion{}, nil, httpResp, err
	}
	defer done()
	c, f := decodeCompletion(httpResp.Header.Get("Content-Type"), reply, need)
	if f != nil {
		f.status = statusOf(httpResp)
	}
	return c, f, nil, nil
}

// messagesFor are what c sends in mode: the request's messages, with the
// schema in the last user message unless the server enforces it, then c's
// extra messages.
func (p *plan) messagesFor(c call, mode schemaMode) []abi.Message {
	base := p.req.Messages
	if p.schema != nil && mode != modeJSONSchema {
		base = withSchemaInstruction(base, p.schema.canonical)
	}
	if len(c.extra) == 0 {
		return base
	}
	return append(append(make([]abi.Message, 0, len(base)+len(c.extra)), base...), c.extra...)
}

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
	failStalled                        // a batch exchange moved no byte for the timeout
	failRefused                        // connection refused, host or network unreachable
	failDNS                            // the host name does not exist
	failTLS                            // certificate or handshake failure
	failUnreachable                    // reset, EOF, a transient DNS failure: worth retrying
	failUnparseable                    // 2xx with a body that is not a chat completion
	failErrorBody                      // 2xx whose body is {"error": …}
	failCancelled                      // the caller's context ended
)

// failure is one failed attempt, classified.
type failure struct {
	kind   failureKind
	status int
	// retryAfter is what the server asked us to wait (0: it did not say).
	retryAfter    time.Duration
	hasRetryAfter bool
	// detail is what went wrong, in the server's own words when it gave
	// any (bounded, control characters removed; the judge redacts the key).
	detail string
}

func (f *failure) retryable() bool {
	switch f.kind {
	case failRateLimited, failServer, failTimeout, failStalled, failRefused, failUnreachable:
		return true
	}
	return false
}

// maxRetries is how many retries f's kind is worth. A refused connection
// gets one (a server restarting), not the full backoff ladder: a server
// that is down stays down, and the breaker is there to notice.
func (f *failure) maxRetries(configured int) int {
	if f.kind == failRefused {
		return min(configured, 1)
	}
	return configured
}

// unfixable says no retry, now or later in this run, can make the call
// succeed: the server is not there, or will not let us in. Consecutive
// unfixable failures open the judge's breaker.
func (f *failure) unfixable() bool {
	switch f.kind {
	case failAuth, failForbidden, failNotFound, failRefused, failDNS, failTLS:
		return true
	}
	return false
}

// maxErrorBodyBytes bounds what the judge reads of an error reply's body.
const maxErrorBodyBytes = maxWordsInput

// attempt makes one HTTP request through the judge's provider and
// classifies the outcome.
func (j *Judge) attempt(ctx context.Context, body []byte, need openaiwire.Need) (completion, *failure) {
	c, f, httpResp, err := j.provider.attempt(ctx, body, need)
	if err != nil {
		f = j.classify(ctx, httpResp, err)
	}
	if f != nil {
		f.detail = j.words(f.detail)
	}
	return c, f
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
	var anthropicErr *anthropic.Error
	apiMessage := ""
	switch {
	case errors.As(err, &apiErr):
		apiMessage = apiErr.Message
		if status == 0 {
			status = apiErr.StatusCode
		}
	case errors.As(err, &anthropicErr):
		apiMessage = anthropicErr.Error()
		if status == 0 {
			status = anthropicErr.StatusCode
		}
	}
	if status >= 400 {
		f := &failure{status: status}
		// openai-go has read the body and put it back for us; it parses
		// only OpenAI's error shape, and a proxy's text page, a FastAPI
		// detail list or a bare {"error": "…"} would lose the server's
		// words.
		var body []byte
		if httpResp != nil && httpResp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(httpResp.Body, maxErrorBodyBytes))
			f.detail = serverWords(body)
		}
		if f.detail == "" && apiMessage != "" {
			f.detail = oneLine(apiMessage)
		}
		if httpResp != nil {
			f.retryAfter, f.hasRetryAfter = retryAfter(httpResp.Header, j.clock.Now())
		}
		if !f.hasRetryAfter {
			f.retryAfter, f.hasRetryAfter = googleRetryDelay(body)
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
		if s, ok := stall.Cause(ctx); ok {
			return &failure{kind: failStalled, detail: s.Error()}
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return &failure{kind: failCancelled, detail: "cancelled"}
		}
		return &failure{kind: failTimeout, detail: "timed out"}
	}
	if httpResp != nil {
		// The server answered 2xx, but the body could not be read.
		return &failure{kind: failUnparseable, status: status, detail: oneLine(err.Error())}
	}
	return &failure{kind: transportKind(err), detail: transportDetail(err)}
}

// transportKind tells a server that is not there (refused, no such host,
// bad certificate) from a connection that failed on the way.
func transportKind(err error) failureKind {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return failDNS
		}
		return failUnreachable
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return failRefused
	}
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	if errors.As(err, &certErr) || errors.As(err, &recErr) || errors.As(err, &alertErr) ||
		errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalidErr) ||
		// net/http replaces the tls.RecordHeaderError of an https URL
		// pointed at a plain HTTP server with a bare error.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return failTLS
	}
	return failUnreachable
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

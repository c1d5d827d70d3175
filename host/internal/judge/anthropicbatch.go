package judge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

// Anthropic's Message Batches API behind the batcher: a batch is created
// with its requests inline (requests[] of {custom_id, params}, params the
// Messages body the live wire would send), polled until its
// processing_status is ended, and its results read as JSONL of {custom_id,
// result: {type: succeeded|errored|canceled|expired, message|error}}.
//
// Create and poll go through the SDK's MessageBatchService (the body given
// as it is: the params are already the SDK's MessageNewParams, marshalled
// by encode). The results are read raw through the SDK's client at the
// path ResultsStreaming uses, not through ResultsStreaming: its stream
// scans with bufio.Scanner's default 64 KiB line limit and ends silently
// on a longer line, stops at the first line it cannot decode, and is nil
// when the request failed. Here every line is decoded strictly on its
// own; a line that is not one leaves its request missing, sent again.

// anthropicCustomID is the API's rule for custom_id. The batcher's ids
// (32 hex digits, "-", a sample number) keep it.
var anthropicCustomID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// anthropicMaxBatchRequests is the most requests one batch may hold.
const anthropicMaxBatchRequests = 100_000

func (a *anthropicProvider) batches() *anthropic.MessageBatchService {
	// Built from the client's options at each call: a Client made without
	// NewClient has no services of its own (newAnthropicProvider).
	s := anthropic.NewMessageBatchService(append(a.api.Options, noRequestTimeout)...)
	return &s
}

// noRequestTimeout lifts the client's request timeout (the per-attempt
// timeout of a live call) off a batch's calls: the stall guard the
// batcher puts on their context bounds them instead (stall.WithGuard).
var noRequestTimeout = option.WithRequestTimeout(0)

type anthropicBatchRequest struct {
	CustomID string         `json:"custom_id"`
	Params   jsontext.Value `json:"params"`
}

func (a *anthropicProvider) submit(ctx context.Context, reqs []batchRequest) (string, *http.Response, error) {
	if len(reqs) > anthropicMaxBatchRequests {
		return "", nil, fmt.Errorf("a message batch of %d requests: over the API's %d", len(reqs), anthropicMaxBatchRequests)
	}
	var body struct {
		Requests []anthropicBatchRequest `json:"requests"`
	}
	for _, r := range reqs {
		if !anthropicCustomID.MatchString(r.customID) {
			return "", nil, fmt.Errorf("custom_id %q: the API takes 1 to 64 of a-z, A-Z, 0-9, _ and -", r.customID)
		}
		body.Requests = append(body.Requests, anthropicBatchRequest{CustomID: r.customID, Params: r.body})
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return "", nil, fmt.Errorf("encoding the message batch: %w", err)
	}
	var httpResp *http.Response
	b, err := a.batches().New(ctx, anthropic.MessageBatchNewParams{},
		option.WithRequestBody("application/json", raw), option.WithResponseInto(&httpResp))
	if err != nil {
		return "", httpResp, fmt.Errorf("creating the message batch: %w", err)
	}
	if b.ID == "" {
		return "", nil, fmt.Errorf("creating the message batch: the reply names no batch id")
	}
	return b.ID, nil, nil
}

func (a *anthropicProvider) status(ctx context.Context, id string) (batchStatus, *http.Response, error) {
	var httpResp *http.Response
	b, err := a.batches().Get(ctx, id, option.WithResponseInto(&httpResp))
	if err != nil {
		return batchStatus{}, httpResp, fmt.Errorf("reading message batch %s: %w", id, err)
	}
	c := b.RequestCounts
	return batchStatus{status: string(b.ProcessingStatus), ended: b.ProcessingStatus == anthropic.MessageBatchProcessingStatusEnded,
		requests: int(c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired)}, nil, nil
}

// anthropicResultLine is a line of a message batch's results.
type anthropicResultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string         `json:"type"`
		Message jsontext.Value `json:"message"`
		Error   *struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"error"`
	} `json:"result"`
}

func (a *anthropicProvider) results(ctx context.Context, id string, st batchStatus, limit int, fn func(string, lineResult)) (resultsRead, *http.Response, error) {
	lr := newLineReader(id, st.requests, limit)
	var httpResp *http.Response
	err := a.api.Get(withUnboundedReply(ctx), "v1/messages/batches/"+url.PathEscape(id)+"/results", nil, &httpResp,
		option.WithHeader("Accept", "application/x-jsonl"), noRequestTimeout)
	if err != nil {
		return lr.found, httpResp, fmt.Errorf("reading the results of message batch %s: %w", id, err)
	}
	defer httpResp.Body.Close()
	err = lr.read(httpResp.Body, "results", func(raw []byte) {
		var l anthropicResultLine
		if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" {
			lr.found.bad++
			return
		}
		fn(l.CustomID, anthropicLineResult(l))
	})
	return lr.found, nil, err
}

// anthropicErrorStatus is the HTTP status the Messages API answers each
// error type with: a batch line's error is classified as the live reply
// would be.
var anthropicErrorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// anthropicLineResult turns one result line into a reply or a failure.
func anthropicLineResult(l anthropicResultLine) lineResult {
	switch l.Result.Type {
	case "succeeded":
		// Decoded at delivery, as the live wire decodes a reply.
		return lineResult{comp: completion{raw: l.Result.Message}}
	case "errored":
		if l.Result.Error == nil {
			return lineResult{f: &failure{kind: failServer, detail: "an errored batch result without an error"}, again: true}
		}
		e := l.Result.Error.Error
		status, ok := anthropicErrorStatus[e.Type]
		if !ok {
			// A type this build does not know: the server's, retried.
			status = http.StatusInternalServerError
		}
		return statusFailure(status, e.Type+": "+e.Message)
	case "canceled", "expired":
		return lineResult{f: &failure{kind: failServer, detail: "the batch was " + l.Result.Type + " before the request ran"}, again: true}
	}
	return lineResult{f: &failure{kind: failUnparseable, detail: fmt.Sprintf("a batch result of type %q", l.Result.Type)}, again: true}
}

func (a *anthropicProvider) decodeLine(raw []byte, _ openaiwire.Need) (completion, *failure) {
	return decodeAnthropic("application/json", raw)
}

package judge

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

// batchWire is a provider's batch API: create a batch of requests, read
// its status, read its results once it has ended, decode a line's reply.
// Errors come back with the HTTP response they got, if any, for
// Judge.classify.
type batchWire interface {
	submit(ctx context.Context, reqs []batchRequest) (string, *http.Response, error)
	status(ctx context.Context, id string) (batchStatus, *http.Response, error)
	// results reads an ended batch's result lines, handing each to fn
	// as it is read (its custom_id and its reply's body undecoded, as
	// lineResult.comp.raw), each line bounded by limit bytes and the
	// lines by the batch's request count (newLineReader).
	results(ctx context.Context, id string, st batchStatus, limit int, fn func(customID string, r lineResult)) (resultsRead, *http.Response, error)
	// decodeLine decodes a line's reply body as the live wire decodes a
	// reply.
	decodeLine(raw []byte, need openaiwire.Need) (completion, *failure)
}

// batchRequest is one request of a batch.
type batchRequest struct {
	customID string
	body     []byte
}

// batchStatus is what the judge reads of a batch object.
type batchStatus struct {
	// status is the provider's word for it, for messages.
	status string
	// ended says the batch will not change any more: its results are
	// final.
	ended bool
	// outputFileID and errorFileID are OpenAI's result files.
	outputFileID, errorFileID string
	// requests is how many requests the batch holds (0: not said).
	requests int
	// failed is set when the provider refused to run the batch (OpenAI's
	// status failed): its reasons (the batch's errors), which no line
	// carries.
	failed string
}

func (o *openaiProvider) batchURL() string {
	if o.azure {
		// Azure's batch lines name the deployment route without /v1.
		return "/chat/completions"
	}
	return "/v1/chat/completions"
}

// The services are built from the client's options at each call: a
// zero-value Client's own services have none (Client is built without
// NewClient, see newOpenAIProvider).

func (o *openaiProvider) files() *openai.FileService {
	s := openai.NewFileService(o.api.Options...)
	return &s
}

func (o *openaiProvider) batches() *openai.BatchService {
	s := openai.NewBatchService(o.api.Options...)
	return &s
}

// openaiBatchLine is one line of a batch input file.
type openaiBatchLine struct {
	CustomID string         `json:"custom_id"`
	Method   string         `json:"method"`
	URL      string         `json:"url"`
	Body     jsontext.Value `json:"body"`
}

func (o *openaiProvider) submit(ctx context.Context, reqs []batchRequest) (string, *http.Response, error) {
	var jsonl bytes.Buffer
	for _, r := range reqs {
		if err := json.MarshalWrite(&jsonl, openaiBatchLine{CustomID: r.customID, Method: http.MethodPost, URL: o.batchURL(), Body: r.body}); err != nil {
			return "", nil, fmt.Errorf("encoding the batch file: %w", err)
		}
		jsonl.WriteByte('\n')
	}
	var httpResp *http.Response
	f, err := o.files().New(ctx, openai.FileNewParams{
		File:    openai.File(bytes.NewReader(jsonl.Bytes()), "anvil-batch.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch,
	}, option.WithResponseInto(&httpResp))
	if err != nil {
		return "", httpResp, fmt.Errorf("uploading the batch file: %w", err)
	}
	b, err := o.batches().New(ctx, openai.BatchNewParams{
		InputFileID:      f.ID,
		Endpoint:         openai.BatchNewParamsEndpoint(o.batchURL()),
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
	}, option.WithResponseInto(&httpResp))
	if err != nil {
		return "", httpResp, fmt.Errorf("creating the batch of file %s: %w", f.ID, err)
	}
	return b.ID, nil, nil
}

func (o *openaiProvider) status(ctx context.Context, id string) (batchStatus, *http.Response, error) {
	var httpResp *http.Response
	b, err := o.batches().Get(ctx, id, option.WithResponseInto(&httpResp))
	if err != nil {
		return batchStatus{}, httpResp, fmt.Errorf("reading batch %s: %w", id, err)
	}
	st := batchStatus{status: string(b.Status), outputFileID: b.OutputFileID, errorFileID: b.ErrorFileID, requests: int(b.RequestCounts.Total)}
	switch b.Status {
	case "completed", "expired", "cancelled":
		st.ended = true
	case "failed":
		st.ended = true
		var why []string
		for _, e := range b.Errors.Data {
			w := e.Code + ": " + e.Message
			if e.Line > 0 {
				w += fmt.Sprintf(" (input line %d)", e.Line)
			}
			why = append(why, w)
		}
		if len(why) == 0 {
			why = append(why, "the provider gave no reason")
		}
		st.failed = strings.Join(why, "; ")
	}
	return st, nil, nil
}

// openaiResultLine is a line of a batch's output or error file.
type openaiResultLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int            `json:"status_code"`
		Body       jsontext.Value `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (o *openaiProvider) results(ctx context.Context, id string, st batchStatus, limit int, fn func(string, lineResult)) (resultsRead, *http.Response, error) {
	lr := newLineReader(id, st.requests, limit)
	for _, fileID := range []string{st.outputFileID, st.errorFileID} {
		if fileID == "" {
			continue
		}
		resp, err := o.files().Content(withUnboundedReply(ctx), fileID)
		if err != nil {
			return lr.found, resp, fmt.Errorf("reading file %s of batch %s: %w", fileID, id, err)
		}
		err = lr.read(resp.Body, "file "+fileID, func(raw []byte) {
			var l openaiResultLine
			if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" {
				lr.found.bad++
				return
			}
			fn(l.CustomID, openaiLineResult(l))
		})
		resp.Body.Close()
		if err != nil {
			return lr.found, nil, err
		}
	}
	return lr.found, nil, nil
}

// openaiLineResult turns one result line into a reply or a failure.
func openaiLineResult(l openaiResultLine) lineResult {
	switch {
	case l.Response != nil && l.Response.StatusCode/100 == 2:
		// The decoder needs what the waiter needs; decoded at delivery.
		return lineResult{comp: completion{raw: l.Response.Body}}
	case l.Response != nil:
		return statusFailure(l.Response.StatusCode, serverWords(l.Response.Body))
	case l.Error != nil:
		return lineResult{f: &failure{kind: failServer, detail: l.Error.Code + ": " + l.Error.Message}, again: true}
	}
	return lineResult{f: &failure{kind: failUnparseable, detail: "a batch result line with neither response nor error"}, again: true}
}

func (o *openaiProvider) decodeLine(raw []byte, need openaiwire.Need) (completion, *failure) {
	return decodeCompletion("application/json", raw, need)
}

// batchDiscount is the price factor of a batched call: one less the
// price table's batch discount for the judge's provider.
func (j *Judge) batchDiscount() float64 {
	return 1 - j.price.BatchDiscount
}

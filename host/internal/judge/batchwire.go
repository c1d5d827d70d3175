package judge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// batchWire is a provider's batch API: upload a JSONL file of requests
// and create a batch of it, read a batch's status, read a result file.
// Errors come back with the HTTP response they got, if any, for
// Judge.classify.
type batchWire interface {
	// batchURL is the url each line of the input file names.
	batchURL() string
	submit(ctx context.Context, jsonl []byte) (string, *http.Response, error)
	status(ctx context.Context, id string) (batchStatus, *http.Response, error)
	content(ctx context.Context, fileID string) ([]byte, *http.Response, error)
}

// batchStatus is what the judge reads of a batch object.
type batchStatus struct {
	status       string
	outputFileID string
	errorFileID  string
}

// ended says the batch will not change any more: its output and error
// files are final.
func (s batchStatus) ended() bool {
	switch s.status {
	case "completed", "expired", "cancelled", "failed":
		return true
	}
	return false
}

// maxBatchResultBytes bounds what the judge reads of one result file: the
// real API's input limit (200 MB) with room for the replies' logprobs.
const maxBatchResultBytes = 1 << 30

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

func (o *openaiProvider) submit(ctx context.Context, jsonl []byte) (string, *http.Response, error) {
	var httpResp *http.Response
	f, err := o.files().New(ctx, openai.FileNewParams{
		File:    openai.File(bytes.NewReader(jsonl), "anvil-batch.jsonl", "application/jsonl"),
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
	return batchStatus{status: string(b.Status), outputFileID: b.OutputFileID, errorFileID: b.ErrorFileID}, nil, nil
}

func (o *openaiProvider) content(ctx context.Context, fileID string) ([]byte, *http.Response, error) {
	resp, err := o.files().Content(ctx, fileID)
	if err != nil {
		return nil, resp, fmt.Errorf("reading file %s: %w", fileID, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBatchResultBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading file %s: %w", fileID, err)
	}
	if len(b) > maxBatchResultBytes {
		return nil, nil, fmt.Errorf("reading file %s: over %d bytes", fileID, maxBatchResultBytes)
	}
	return b, nil, nil
}

// batchDiscount is the price factor of a batched call: one less the
// price table's batch discount for the judge's provider.
func (j *Judge) batchDiscount() float64 {
	return 1 - j.price.BatchDiscount
}

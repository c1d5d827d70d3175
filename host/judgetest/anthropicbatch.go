package judgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"
)

// Anthropic's Message Batches API, as the fake serves it: POST
// /v1/messages/batches (requests[] of {custom_id, params}), GET
// /v1/messages/batches/{id} (processing_status in_progress, canceling or
// ended; request_counts; results_url once ended), GET
// /v1/messages/batches/{id}/results (JSONL of {custom_id, result: {type:
// succeeded|errored|canceled|expired, message|error}}) and POST
// /v1/messages/batches/{id}/cancel, each with the headers the Messages
// endpoint needs (x-api-key, anthropic-version). As the real API does, it
// checks the requests' shape at creation — custom_id 1 to 64 of
// [a-zA-Z0-9_-], unique; params an object; at most 100,000 requests — and
// each params as a Messages request only when the batch runs: a bad one
// is an errored result (invalid_request_error). Batches share the OpenAI
// fake's machinery: BatchManual leaves one in_progress until
// CompleteBatch, ExpireBatch or CancelBatch; under BatchAuto the second
// status read ends it; a cancel ends it canceling at the next read.

// messageBatchCustomID is the API's rule for custom_id.
var messageBatchCustomID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Limits of one message batch: 100,000 requests, 256 MB.
const (
	maxMessageBatchRequests = 100_000
	maxMessageBatchBytes    = 256 << 20
)

func (s *Server) serveMessageBatchCreate(w http.ResponseWriter, r *http.Request) {
	if !s.anthropicAuthorized(w, r) {
		return
	}
	if s.batch.stallCreate(r) {
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxMessageBatchBytes+1))
	if err != nil || len(data) > maxMessageBatchBytes {
		writeAnthropicError(w, http.StatusRequestEntityTooLarge, "request_too_large", "a message batch is at most 256 MB")
		return
	}
	var p struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	if len(p.Requests) == 0 || len(p.Requests) > maxMessageBatchRequests {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("requests: %d requests; a batch holds 1 to %d", len(p.Requests), maxMessageBatchRequests))
		return
	}
	seen := map[string]bool{}
	lines := make([]batchLine, 0, len(p.Requests))
	for i, q := range p.Requests {
		switch {
		case !messageBatchCustomID.MatchString(q.CustomID):
			writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("requests.%d.custom_id: %q should match ^[a-zA-Z0-9_-]{1,64}$", i, q.CustomID))
			return
		case seen[q.CustomID]:
			writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("requests.%d.custom_id: %q is not unique in the batch", i, q.CustomID))
			return
		case len(bytes.TrimSpace(q.Params)) == 0 || bytes.TrimSpace(q.Params)[0] != '{':
			writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("requests.%d.params: Input should be an object", i))
			return
		}
		seen[q.CustomID] = true
		lines = append(lines, batchLine{CustomID: q.CustomID, Method: http.MethodPost, URL: AnthropicMessagesPath, Body: q.Params})
	}
	s.batch.mu.Lock()
	s.batch.init()
	fb := &fakeBatch{id: s.batch.nextID("msgbatch_"), endpoint: AnthropicMessagesPath, status: "in_progress", lines: lines, created: time.Now().Unix()}
	s.batch.batches[fb.id] = fb
	s.batch.order = append(s.batch.order, fb.id)
	s.batch.creates++
	onCreate := s.batch.onCreate
	obj := s.messageBatchObject(fb)
	s.batch.mu.Unlock()
	if onCreate != nil {
		onCreate(fb.id)
	}
	writeJSON(w, http.StatusOK, obj)
}

// messageBatch finds batch id, answering 404 as the API does if there is
// none. The lock is held when it returns one.
func (s *Server) messageBatch(w http.ResponseWriter, r *http.Request) *fakeBatch {
	if !s.anthropicAuthorized(w, r) {
		return nil
	}
	id := r.PathValue("id")
	s.batch.mu.Lock()
	s.batch.init()
	fb := s.batch.batches[id]
	if fb == nil {
		s.batch.mu.Unlock()
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("message batch %q not found", id))
	}
	return fb
}

func (s *Server) serveMessageBatchGet(w http.ResponseWriter, r *http.Request) {
	fb := s.messageBatch(w, r)
	if fb == nil {
		return
	}
	if s.batch.stallStatusRead(r) {
		s.batch.mu.Unlock()
		return
	}
	if s.batch.failStatusRead() {
		s.batch.mu.Unlock()
		writeAnthropicError(w, http.StatusInternalServerError, "api_error", "Internal server error")
		return
	}
	fb.polls++
	end := ""
	switch {
	case fb.status == "canceling":
		end = "cancelled"
	case fb.status == "in_progress" && s.batch.mode == BatchAuto && fb.polls >= 2:
		end = "completed"
	}
	s.batch.mu.Unlock()
	if end != "" {
		done := -1
		if end == "cancelled" {
			done = 0
		}
		if err := s.endBatch(fb.id, end, done); err != nil {
			writeAnthropicError(w, http.StatusInternalServerError, "api_error", err.Error())
			return
		}
	}
	s.batch.mu.Lock()
	obj := s.messageBatchObject(fb)
	s.batch.mu.Unlock()
	writeJSON(w, http.StatusOK, obj)
}

func (s *Server) serveMessageBatchCancel(w http.ResponseWriter, r *http.Request) {
	fb := s.messageBatch(w, r)
	if fb == nil {
		return
	}
	if fb.status == "in_progress" {
		fb.status, fb.cancelling = "canceling", time.Now().Unix()
	}
	obj := s.messageBatchObject(fb)
	s.batch.mu.Unlock()
	writeJSON(w, http.StatusOK, obj)
}

func (s *Server) serveMessageBatchResults(w http.ResponseWriter, r *http.Request) {
	fb := s.messageBatch(w, r)
	if fb == nil {
		return
	}
	status, results := fb.status, fb.results
	s.batch.mu.Unlock()
	if status != "ended" {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("message batch %s is %s: its results are available once it has ended", fb.id, status))
		return
	}
	if s.batch.failRead() {
		writeAnthropicError(w, http.StatusInternalServerError, "api_error", "Internal server error")
		return
	}
	w.Header().Set("Content-Type", "application/x-jsonl")
	w.WriteHeader(http.StatusOK)
	s.batch.writeResults(w, r, results)
}

// endMessageBatch answers the first done requests of fb by the server's
// rules and gives the rest the result type status says (expired or
// canceled); fb ends.
func (s *Server) endMessageBatch(fb *fakeBatch, status string, done int) {
	var out []any
	counts := map[string]int{}
	for i, l := range fb.lines {
		var result map[string]any
		switch {
		case i < done:
			result = s.answerMessageLine(l)
		case status == "expired":
			result = map[string]any{"type": "expired"}
		default:
			result = map[string]any{"type": "canceled"}
		}
		counts[result["type"].(string)]++
		out = append(out, map[string]any{"custom_id": l.CustomID, "result": result})
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	fb.status, fb.results, fb.counts, fb.ended = "ended", out, counts, time.Now().Unix()
}

// answerMessageLine answers one request of a message batch as the
// Messages endpoint would: a succeeded result with the message, or an
// errored one with the error the endpoint would have sent.
func (s *Server) answerMessageLine(l batchLine) map[string]any {
	s.calls.Add(1)
	errored := func(typ, msg string) map[string]any {
		return map[string]any{"type": "errored", "error": map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}}
	}
	req, toolName, err := parseAnthropic(l.Body)
	if err != nil {
		return errored("invalid_request_error", err.Error())
	}
	req.Header = http.Header{}
	reply := s.pick(req)
	if reply.Status >= 400 {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		return errored(anthropicErrorType(reply.Status), msg)
	}
	return map[string]any{"type": "succeeded", "message": s.anthropicMessage(req, toolName, reply)}
}

// messageBatchObject is fb as the API shows it. The lock is held.
func (s *Server) messageBatchObject(fb *fakeBatch) map[string]any {
	stamp := func(t int64) any {
		if t == 0 {
			return nil
		}
		return time.Unix(t, 0).UTC().Format(time.RFC3339)
	}
	processing := 0
	if fb.status != "ended" {
		processing = len(fb.lines)
	}
	var resultsURL any
	if fb.status == "ended" {
		resultsURL = s.url + "/v1/messages/batches/" + fb.id + "/results"
	}
	return map[string]any{
		"id": fb.id, "type": "message_batch", "processing_status": fb.status,
		"request_counts": map[string]int{"processing": processing, "succeeded": fb.counts["succeeded"],
			"errored": fb.counts["errored"], "canceled": fb.counts["canceled"], "expired": fb.counts["expired"]},
		"created_at": stamp(fb.created), "expires_at": stamp(fb.created + 24*3600), "ended_at": stamp(fb.ended),
		"cancel_initiated_at": stamp(fb.cancelling), "archived_at": nil, "results_url": resultsURL,
	}
}

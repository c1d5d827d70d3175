package judgetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The OpenAI Batch API, as the fake serves it: POST /v1/files (multipart,
// purpose=batch, the JSONL checked line by line as the real API checks
// it), POST /v1/batches, GET /v1/batches/{id}, POST
// /v1/batches/{id}/cancel and GET /v1/files/{id}/content, the output and
// error files in the real shapes. A batch's lines are answered by the
// same rules as live requests (and recorded and counted as they are),
// when the batch completes. When it completes is the test's to say:
// under BatchManual a batch stays in_progress until CompleteBatch,
// ExpireBatch or CancelBatch; under BatchAuto (the default) each status
// poll moves it one step, validating → in_progress → finalizing →
// completed. Nothing waits on a clock.

// BatchMode says how batches progress.
type BatchMode int

const (
	// BatchAuto moves a batch one status step per poll.
	BatchAuto BatchMode = iota
	// BatchManual leaves a batch in_progress until the test ends it.
	BatchManual
)

// BatchInfo is what a test can see of a batch.
type BatchInfo struct {
	ID, Status, InputFileID string
	// CustomIDs are the batch's requests, in file order.
	CustomIDs []string
}

// batchLine is one request of an uploaded batch file.
type batchLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

type fakeFile struct {
	id, purpose, name string
	data              []byte
	lines             []batchLine
	created           int64
	// results are an output or error file's lines, encoded as the file
	// is read: a batch's output can be far larger than what it is made
	// of (one reply's content, shared by many lines).
	results []any
}

type fakeBatch struct {
	id, endpoint, inputFileID, status string
	lines                             []batchLine
	outputFileID                      string
	errorFileID                       string
	completed, failed                 int
	created                           int64
	// errors are a failed batch's (FailBatch).
	errors   []map[string]any
	metadata map[string]string
	// An Anthropic message batch's result lines (encoded as they are
	// read, as an output file's), its counts by result type, its status
	// reads, and when it ended or was asked to cancel.
	results           []any
	counts            map[string]int
	polls             int
	ended, cancelling int64
}

// batchState is the server's files and batches.
type batchState struct {
	mu       sync.Mutex
	mode     BatchMode
	files    map[string]*fakeFile
	batches  map[string]*fakeBatch
	order    []string
	creates  int
	uploads  int
	onCreate func(id string)
	seq      int
	// failReads is how many reads of results to answer 500 still;
	// failStatus, how many reads of a batch's status.
	failReads, failStatus int
	// stallReads is how many reads of results to stall still, after
	// stallAfter lines; stallStatus and stallCreates, how many status
	// reads and creates; resultsGap paces the lines of every read of
	// results.
	stallReads, stallAfter, stallStatus, stallCreates int
	resultsGap                                        time.Duration
}

func (b *batchState) init() {
	if b.files == nil {
		b.files = map[string]*fakeFile{}
		b.batches = map[string]*fakeBatch{}
	}
}

func (b *batchState) nextID(prefix string) string {
	b.seq++
	return fmt.Sprintf("%s%06d", prefix, b.seq)
}

// SetBatchMode sets how batches created from now on progress.
func (s *Server) SetBatchMode(m BatchMode) {
	s.setBatch(func(b *batchState) { b.mode = m })
}

// OnBatchCreate calls f with each batch's id once it is created (and
// before the create request is answered).
func (s *Server) OnBatchCreate(f func(id string)) {
	s.setBatch(func(b *batchState) { b.onCreate = f })
}

// FailResultsReads makes the next n reads of a batch's results (an
// output or error file's content, an Anthropic batch's results) answer
// 500, as a server failing on the way does.
func (s *Server) FailResultsReads(n int) {
	s.setBatch(func(b *batchState) { b.failReads = n })
}

// FailStatusReads makes the next n reads of a batch's status (GET
// /v1/batches/{id}, an Anthropic batch's GET) answer 500, as a server
// failing while a batch runs does.
func (s *Server) FailStatusReads(n int) {
	s.setBatch(func(b *batchState) { b.failStatus = n })
}

// setBatch changes the batch state under its lock.
func (s *Server) setBatch(change func(*batchState)) {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	change(&s.batch)
}

// PaceResults makes every read of a batch's results send its lines gap
// apart, each flushed as it is written: a slow link, on which reading a
// large batch's results takes longer than any one reply should.
func (s *Server) PaceResults(gap time.Duration) {
	s.setBatch(func(b *batchState) { b.resultsGap = gap })
}

// StallResults makes the next n reads of a batch's results send their
// first after lines and then nothing, holding the connection open until
// the client gives up on it: a server or proxy that stalls mid-stream.
func (s *Server) StallResults(n, after int) {
	s.setBatch(func(b *batchState) { b.stallReads, b.stallAfter = n, after })
}

// StallStatusReads makes the next n reads of a batch's status answer
// nothing until the client gives up on them.
func (s *Server) StallStatusReads(n int) {
	s.setBatch(func(b *batchState) { b.stallStatus = n })
}

// StallCreates makes the next n requests to create a batch answer
// nothing until the client gives up on them.
func (s *Server) StallCreates(n int) {
	s.setBatch(func(b *batchState) { b.stallCreates = n })
}

// take counts one use of *left and says whether there was one left.
func take(left *int) bool {
	if *left > 0 {
		*left--
		return true
	}
	return false
}

// holdUntilGone answers r nothing more until its client goes.
func holdUntilGone(r *http.Request) {
	// Read to its end: net/http notices the client going only once the
	// request body has been read.
	io.Copy(io.Discard, r.Body) //nolint:errcheck
	<-r.Context().Done()
}

// stallCreate holds this create request until its client goes, if it is
// one to stall (counting it), and says so.
func (b *batchState) stallCreate(r *http.Request) bool {
	b.mu.Lock()
	stall := take(&b.stallCreates)
	b.mu.Unlock()
	if stall {
		holdUntilGone(r)
	}
	return stall
}

// stallStatusRead holds this status read until its client goes, if it is
// one to stall (counting it), and says so; the lock is held, and released
// while it waits.
func (b *batchState) stallStatusRead(r *http.Request) bool {
	if !take(&b.stallStatus) {
		return false
	}
	b.mu.Unlock()
	holdUntilGone(r)
	b.mu.Lock()
	return true
}

// writeResults writes a read of a batch's results, paced and stalled as
// the test asked.
func (b *batchState) writeResults(w http.ResponseWriter, r *http.Request, lines []any) {
	b.mu.Lock()
	gap, stallAt := b.resultsGap, -1
	if take(&b.stallReads) {
		stallAt = b.stallAfter
	}
	b.mu.Unlock()
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	for i, l := range lines {
		if i == stallAt {
			break
		}
		if i > 0 && gap > 0 {
			time.Sleep(gap)
		}
		if enc.Encode(l) != nil { // Encode ends each value with a newline
			return
		}
		if gap > 0 || stallAt >= 0 {
			flusher.Flush()
		}
	}
	if stallAt >= 0 {
		flusher.Flush()
		holdUntilGone(r)
	}
}

// failStatusRead says whether this status read is to fail, counting it;
// the lock is held.
func (b *batchState) failStatusRead() bool { return take(&b.failStatus) }

// failRead says whether this read of results is to fail, counting it.
func (b *batchState) failRead() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return take(&b.failReads)
}

// BatchCreates is the number of batches created (POST /v1/batches that
// succeeded).
func (s *Server) BatchCreates() int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return s.batch.creates
}

// Batches lists the batches created, in creation order.
func (s *Server) Batches() []BatchInfo {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	var out []BatchInfo
	for _, id := range s.batch.order {
		fb := s.batch.batches[id]
		info := BatchInfo{ID: fb.id, Status: fb.status, InputFileID: fb.inputFileID}
		for _, l := range fb.lines {
			info.CustomIDs = append(info.CustomIDs, l.CustomID)
		}
		out = append(out, info)
	}
	return out
}

// CompleteBatch answers every request of batch id (by the server's rules;
// a reply with Status ≥ 400 goes to the error file) and marks it completed
// (an Anthropic message batch: ended, each line succeeded or errored).
func (s *Server) CompleteBatch(id string) error { return s.endBatch(id, "completed", -1) }

// ExpireBatch answers the first done requests of batch id and marks it
// expired: the rest go to the error file as batch_expired, as the real
// API reports requests the completion window ran out on (an Anthropic
// message batch: ended, the rest of type expired).
func (s *Server) ExpireBatch(id string, done int) error { return s.endBatch(id, "expired", done) }

// CancelBatch answers the first done requests of batch id and marks it
// cancelled; the rest are batch_cancelled in the error file (an Anthropic
// message batch: ended, the rest of type canceled).
func (s *Server) CancelBatch(id string, done int) error { return s.endBatch(id, "cancelled", done) }

// FailBatch marks batch id failed with one error (code and message, as
// the real API reports a batch it would not run: its input failed
// validation, or it was over the organisation's enqueued-token limit,
// token_limit_exceeded): no request is answered, and there are no output
// or error files. Not for an Anthropic message batch (that API has no
// failed batches).
func (s *Server) FailBatch(id, code, message string) error {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	fb := s.batch.batches[id]
	switch {
	case fb == nil:
		return fmt.Errorf("judgetest: no batch %q", id)
	case s.anthropic:
		return fmt.Errorf("judgetest: a message batch cannot fail")
	case isFinal(fb.status):
		return fmt.Errorf("judgetest: batch %q has ended (%s)", id, fb.status)
	}
	fb.status, fb.errors = "failed", []map[string]any{{"code": code, "message": message, "param": nil, "line": nil}}
	return nil
}

func (s *Server) endBatch(id, status string, done int) error {
	s.batch.mu.Lock()
	fb := s.batch.batches[id]
	if fb == nil {
		s.batch.mu.Unlock()
		return fmt.Errorf("judgetest: no batch %q", id)
	}
	if fb.outputFileID != "" || fb.errorFileID != "" || isFinal(fb.status) {
		s.batch.mu.Unlock()
		return fmt.Errorf("judgetest: batch %q has ended (%s)", id, fb.status)
	}
	lines := fb.lines
	s.batch.mu.Unlock()
	if done < 0 || done > len(lines) {
		done = len(lines)
	}
	if s.anthropic {
		s.endMessageBatch(fb, status, done)
		return nil
	}
	var out, errs []any
	completed, failed := 0, 0
	for i, l := range lines {
		reqID := fmt.Sprintf("req_judgetest_%s_%d", id, i)
		lineID := fmt.Sprintf("batch_req_%s_%d", id, i)
		if i >= done {
			failed++
			code := "batch_" + status
			errs = append(errs, map[string]any{"id": lineID, "custom_id": l.CustomID, "response": nil,
				"error": map[string]any{"code": code, "message": "This request could not be executed before the batch " + status + "."}})
			continue
		}
		status, body := s.answerLine(l)
		if status >= 400 {
			failed++
			errs = append(errs, map[string]any{"id": lineID, "custom_id": l.CustomID,
				"response": map[string]any{"status_code": status, "request_id": reqID, "body": body}, "error": nil})
			continue
		}
		completed++
		out = append(out, map[string]any{"id": lineID, "custom_id": l.CustomID,
			"response": map[string]any{"status_code": status, "request_id": reqID, "body": body}, "error": nil})
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	now := time.Now().Unix()
	if len(out) > 0 {
		f := &fakeFile{id: s.batch.nextID("file-out"), purpose: "batch_output", name: "batch_" + id + "_output.jsonl", results: out, created: now}
		s.batch.files[f.id] = f
		fb.outputFileID = f.id
	}
	if len(errs) > 0 {
		f := &fakeFile{id: s.batch.nextID("file-err"), purpose: "batch_output", name: "batch_" + id + "_error.jsonl", results: errs, created: now}
		s.batch.files[f.id] = f
		fb.errorFileID = f.id
	}
	fb.status, fb.completed, fb.failed = status, completed, failed
	return nil
}

// answerLine answers one batch request as the completions endpoint
// would: its status and body (a chat completion or an error object).
func (s *Server) answerLine(l batchLine) (int, any) {
	s.calls.Add(1)
	req, err := parseRequest(l.Body)
	if err != nil {
		return http.StatusBadRequest, map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error", "param": nil, "code": nil}}
	}
	req.Header = http.Header{}
	reply := s.pick(req)
	if reply.Status >= 400 {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		return reply.Status, map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": nil}}
	}
	return statusOr(reply.Status, http.StatusOK), s.completion(req, reply)
}

func isFinal(status string) bool {
	switch status {
	case "completed", "expired", "cancelled", "failed", "ended":
		return true
	}
	return false
}

func (s *Server) batchAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if s.azure != nil {
		return s.azureAuthorized(w, r)
	}
	if s.apiKey == "" {
		return true
	}
	if strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") != s.apiKey {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
		return false
	}
	return true
}

// maxBatchFileBytes and maxBatchLines are the real API's limits on an
// input file (200 MB, 50,000 requests).
const (
	maxBatchFileBytes = 200 << 20
	maxBatchLines     = 50000
)

func (s *Server) serveFileUpload(w http.ResponseWriter, r *http.Request) {
	if !s.batchAuthorized(w, r) {
		return
	}
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		s.batchError(w, http.StatusBadRequest, "expected a multipart/form-data body: "+err.Error(), "")
		return
	}
	purpose := r.FormValue("purpose")
	if purpose != "batch" {
		s.batchError(w, http.StatusBadRequest, fmt.Sprintf("purpose %q: this fake accepts only purpose=batch", purpose), "")
		return
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		s.batchError(w, http.StatusBadRequest, "missing file: "+err.Error(), "")
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBatchFileBytes+1))
	if err != nil || len(data) > maxBatchFileBytes {
		s.batchError(w, http.StatusBadRequest, "file unreadable or over 200 MB", "")
		return
	}
	lines, err := s.parseBatchFile(data)
	if err != nil {
		s.batchError(w, http.StatusBadRequest, err.Error(), "invalid_file")
		return
	}
	s.batch.mu.Lock()
	s.batch.init()
	ff := &fakeFile{id: s.batch.nextID("file-"), purpose: purpose, name: hdr.Filename, data: data, lines: lines, created: time.Now().Unix()}
	s.batch.files[ff.id] = ff
	s.batch.uploads++
	s.batch.mu.Unlock()
	writeJSON(w, http.StatusOK, fileObject(ff))
}

// batchURL is the url a batch line and a batch's endpoint name: Azure's
// route has no /v1.
func (s *Server) batchURL() string {
	if s.azure != nil {
		return "/chat/completions"
	}
	return CompletionsPath
}

// batchError writes an error in the server's flavour: OpenAI's shape, or
// Azure's {"error": {"code", "message"}}.
func (s *Server) batchError(w http.ResponseWriter, status int, msg, code string) {
	if s.azure != nil {
		if code == "" {
			code = strconv.Itoa(status)
		}
		writeAzureError(w, status, code, msg)
		return
	}
	writeError(w, status, msg, "invalid_request_error", code)
}

// parseBatchFile checks a batch input file line by line as the real API
// does: each line a JSON object with a custom_id unique in the file,
// method POST, url /v1/chat/completions (Azure: /chat/completions), and a
// body that is a chat completion request; one model throughout (Azure:
// the resource's deployment).
func (s *Server) parseBatchFile(data []byte) ([]batchLine, error) {
	var lines []batchLine
	seen := map[string]bool{}
	model := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxBatchFileBytes)
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l batchLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: not a batch request: %v", n, err)
		}
		switch {
		case l.CustomID == "":
			return nil, fmt.Errorf("line %d: custom_id is missing", n)
		case seen[l.CustomID]:
			return nil, fmt.Errorf("line %d: custom_id %q is not unique in the file", n, l.CustomID)
		case l.Method != "POST":
			return nil, fmt.Errorf("line %d: method %q: only POST is supported", n, l.Method)
		case l.URL != s.batchURL():
			return nil, fmt.Errorf("line %d: url %q: this fake batches only %s", n, l.URL, s.batchURL())
		}
		req, err := parseRequest(l.Body)
		if err != nil {
			return nil, fmt.Errorf("line %d: body: %v", n, err)
		}
		if s.azure != nil && req.Model != s.azure.deployment {
			return nil, fmt.Errorf("line %d: model %q: the resource has no deployment of that name (DeploymentNotFound)", n, req.Model)
		}
		if model == "" {
			model = req.Model
		} else if req.Model != model {
			return nil, fmt.Errorf("line %d: model %q: a batch file must use one model (%q before)", n, req.Model, model)
		}
		seen[l.CustomID] = true
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %v", n+1, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("the file holds no requests")
	}
	if len(lines) > maxBatchLines {
		return nil, fmt.Errorf("%d requests: over the limit of %d", len(lines), maxBatchLines)
	}
	return lines, nil
}

func fileObject(f *fakeFile) map[string]any {
	return map[string]any{"id": f.id, "object": "file", "bytes": len(f.data), "created_at": f.created,
		"filename": f.name, "purpose": f.purpose, "status": "processed", "expires_at": nil, "status_details": nil}
}

func (s *Server) serveBatchCreate(w http.ResponseWriter, r *http.Request) {
	if !s.batchAuthorized(w, r) {
		return
	}
	if s.batch.stallCreate(r) {
		return
	}
	var p struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		s.batchError(w, http.StatusBadRequest, "body: "+err.Error(), "")
		return
	}
	if p.Endpoint != s.batchURL() || p.CompletionWindow != "24h" {
		s.batchError(w, http.StatusBadRequest, fmt.Sprintf("endpoint %q, completion_window %q: want %s and 24h", p.Endpoint, p.CompletionWindow, s.batchURL()), "")
		return
	}
	s.batch.mu.Lock()
	s.batch.init()
	f := s.batch.files[p.InputFileID]
	if f == nil || f.purpose != "batch" {
		s.batch.mu.Unlock()
		s.batchError(w, http.StatusNotFound, fmt.Sprintf("No file with id %q and purpose batch.", p.InputFileID), "")
		return
	}
	fb := &fakeBatch{id: s.batch.nextID("batch_"), endpoint: p.Endpoint, inputFileID: f.id, status: "validating", lines: f.lines, created: time.Now().Unix(), metadata: p.Metadata}
	if s.batch.mode == BatchManual {
		fb.status = "in_progress"
	}
	s.batch.batches[fb.id] = fb
	s.batch.order = append(s.batch.order, fb.id)
	s.batch.creates++
	onCreate := s.batch.onCreate
	obj := batchObject(fb)
	s.batch.mu.Unlock()
	if onCreate != nil {
		onCreate(fb.id)
	}
	writeJSON(w, http.StatusOK, obj)
}

func (s *Server) serveBatchGet(w http.ResponseWriter, r *http.Request) {
	if !s.batchAuthorized(w, r) {
		return
	}
	id := r.PathValue("id")
	s.batch.mu.Lock()
	s.batch.init()
	fb := s.batch.batches[id]
	if fb == nil {
		s.batch.mu.Unlock()
		s.batchError(w, http.StatusNotFound, fmt.Sprintf("No batch found with id '%s'.", id), "")
		return
	}
	if s.batch.stallStatusRead(r) {
		s.batch.mu.Unlock()
		return
	}
	if s.batch.failStatusRead() {
		s.batch.mu.Unlock()
		s.batchError(w, http.StatusInternalServerError, "The server had an error while processing your request.", "server_error")
		return
	}
	auto := s.batch.mode == BatchAuto && !isFinal(fb.status)
	step := ""
	switch {
	case auto && fb.status == "validating":
		step = "in_progress"
	case auto && fb.status == "in_progress":
		step = "finalizing"
	case auto && fb.status == "finalizing":
		step = "completed"
	}
	if step != "" && step != "completed" {
		fb.status = step
	}
	s.batch.mu.Unlock()
	if step == "completed" {
		if err := s.CompleteBatch(id); err != nil {
			s.batchError(w, http.StatusInternalServerError, err.Error(), "")
			return
		}
	}
	s.batch.mu.Lock()
	obj := batchObject(fb)
	s.batch.mu.Unlock()
	writeJSON(w, http.StatusOK, obj)
}

func (s *Server) serveBatchCancel(w http.ResponseWriter, r *http.Request) {
	if !s.batchAuthorized(w, r) {
		return
	}
	id := r.PathValue("id")
	if err := s.CancelBatch(id, 0); err != nil {
		s.batchError(w, http.StatusNotFound, err.Error(), "")
		return
	}
	s.batch.mu.Lock()
	obj := batchObject(s.batch.batches[id])
	s.batch.mu.Unlock()
	writeJSON(w, http.StatusOK, obj)
}

func (s *Server) serveFileContent(w http.ResponseWriter, r *http.Request) {
	if !s.batchAuthorized(w, r) {
		return
	}
	id := r.PathValue("id")
	s.batch.mu.Lock()
	s.batch.init()
	f := s.batch.files[id]
	var data []byte
	var results []any
	if f != nil {
		data, results = slices.Clone(f.data), f.results
	}
	s.batch.mu.Unlock()
	if f == nil {
		s.batchError(w, http.StatusNotFound, fmt.Sprintf("No such File object: %s", id), "")
		return
	}
	if results != nil && s.batch.failRead() {
		s.batchError(w, http.StatusInternalServerError, "The server had an error while processing your request.", "")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if results != nil {
		s.batch.writeResults(w, r, results)
		return
	}
	w.Write(data) //nolint:errcheck
}

func batchObject(fb *fakeBatch) map[string]any {
	var errs any
	if fb.errors != nil {
		errs = map[string]any{"object": "list", "data": fb.errors}
	}
	obj := map[string]any{
		"id": fb.id, "object": "batch", "endpoint": fb.endpoint, "errors": errs,
		"input_file_id": fb.inputFileID, "completion_window": "24h", "status": fb.status,
		"output_file_id": nilIfEmpty(fb.outputFileID), "error_file_id": nilIfEmpty(fb.errorFileID),
		"created_at": fb.created, "expires_at": fb.created + 24*3600,
		"request_counts": map[string]int{"total": len(fb.lines), "completed": fb.completed, "failed": fb.failed},
		"metadata":       fb.metadata,
	}
	return obj
}

// Package judgetest is a fake judge server: an HTTP server speaking the
// OpenAI chat-completions wire format (POST /v1/chat/completions) — or, by
// option, Azure OpenAI's, Anthropic's Messages, the Gemini API's
// generateContent or Bedrock's SigV4-signed Converse, each checking what
// the real API checks — and every format's embeddings endpoint, with
// scripted replies, token log-probabilities, n choices, latency and fault
// injection. End-to-end tests point a real judge client at it; the load
// bench runs it as a standalone server through Handler or Start.
//
// Invariants: replies are chosen by the first matching rule, else the
// default; every request to the completions endpoint is counted (Calls) and,
// unless recording is off, kept (Requests); the server never sleeps except
// for a reply's configured Latency, and a hanging reply ends when the client
// gives up or the server closes.
package judgetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
)

// CompletionsPath is the endpoint the server answers.
const CompletionsPath = "/v1/chat/completions"

// EmbeddingsPath is the OpenAI embeddings endpoint.
const EmbeddingsPath = "/v1/embeddings"

func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read body: "+err.Error(), "invalid_request_error", "")
		return
	}
	if s.apiKey != "" && s.azure == nil && strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") != s.apiKey {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
		return
	}
	s.serveOpenAIEmbeddings(w, r, body)
}

// Server is a fake OpenAI-compatible judge.
type Server struct {
	mu       sync.Mutex
	rules    []rule
	fallback Replier
	requests []RecordedRequest

	calls    atomic.Int64
	ids      atomic.Int64
	apiKey   string
	echoKey  bool
	record   bool
	closing  chan struct{}
	closeOne sync.Once

	// azure, when set, makes the server Azure OpenAI (Azure).
	azure     *azureSpec
	anthropic bool
	gemini    bool
	bedrock   *bedrockSpec
	tls       bool
	embedFn   func(model, text string) []float64

	// batch is the Batch API's files and batches (batch.go).
	batch batchState

	ts   *httptest.Server // set by New
	http *http.Server     // set by Start
	url  string
}

type rule struct {
	match Matcher
	reply Replier
}

// Option configures a Server.
type Option func(*Server)

// WithAPIKey makes the server answer 401 unless the request carries
// "Authorization: Bearer key".
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// EchoWrongKey makes the 401 message quote the key the client sent, as some
// servers do, so tests can check the client never repeats it.
func EchoWrongKey() Option { return func(s *Server) { s.echoKey = true } }

// WithTLS makes New serve https with a test certificate; Client trusts it.
func WithTLS() Option { return func(s *Server) { s.tls = true } }

// Client is an HTTP client for the server started by New (one that trusts
// its certificate under WithTLS).
func (s *Server) Client() *http.Client { return s.ts.Client() }

// WithDefault sets the reply used when no rule matches.
func WithDefault(r Replier) Option { return func(s *Server) { s.fallback = r } }

// WithoutRecording stops keeping request bodies (Calls still counts), for
// long load runs.
func WithoutRecording() Option { return func(s *Server) { s.record = false } }

// DefaultContent is the content of the default reply.
const DefaultContent = `{"reason": "default reply", "score": 5}`

// NewServer returns an unstarted server: serve its Handler, or Start it.
func NewServer(opts ...Option) *Server {
	s := &Server{
		fallback: Reply{Content: DefaultContent},
		record:   true,
		closing:  make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// New starts a server for a test and closes it when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := NewServer(opts...)
	if s.tls {
		s.ts = httptest.NewTLSServer(s.Handler())
	} else {
		s.ts = httptest.NewServer(s.Handler())
	}
	s.url = s.ts.URL + s.basePath()
	t.Cleanup(s.Close)
	return s
}

// Start serves on addr ("127.0.0.1:0" for any free port) in the background
// and returns the base URL.
func (s *Server) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("judgetest: listen on %s: %w", addr, err)
	}
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String() + s.basePath()
	go s.http.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return s.url, nil
}

// basePath is what the base URL adds to the server's root.
func (s *Server) basePath() string {
	if s.azure != nil || s.anthropic || s.gemini || s.bedrock != nil {
		return "" // an Azure resource endpoint, Anthropic's, Gemini's or Bedrock's API: the root
	}
	return "/v1"
}

// URL is the base URL clients use: ending in /v1, or for an Azure server
// the resource endpoint (the root).
func (s *Server) URL() string { return s.url }

// Close stops the server and releases hanging replies.
func (s *Server) Close() {
	s.closeOne.Do(func() { close(s.closing) })
	if s.ts != nil {
		s.ts.Close()
	}
	if s.http != nil {
		s.http.Close()
	}
}

// On adds a rule: requests matching m get r. Rules are tried in the order
// added; the first match wins.
func (s *Server) On(m Matcher, r Replier) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rule{match: m, reply: r})
}

// SetDefault replaces the reply used when no rule matches.
func (s *Server) SetDefault(r Replier) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = r
}

// Reset forgets rules and recorded requests and zeroes Calls.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
	s.requests = nil
	s.calls.Store(0)
}

// Calls is the number of requests the completions endpoint received.
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RecordedRequest(nil), s.requests...)
}

// Handler serves the OpenAI chat-completions endpoint and the Batch API
// (batch.go), or the provider the server was made to speak, with its
// batch API where the fake has one (Azure's files and batches, Anthropic's
// message batches).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	if s.azure != nil {
		mux.HandleFunc("POST /openai/files", s.serveFileUpload)
		mux.HandleFunc("GET /openai/files/{id}/content", s.serveFileContent)
		mux.HandleFunc("POST /openai/batches", s.serveBatchCreate)
		mux.HandleFunc("GET /openai/batches/{id}", s.serveBatchGet)
		mux.HandleFunc("POST /openai/batches/{id}/cancel", s.serveBatchCancel)
		mux.HandleFunc("/", s.serveAzure)
		return mux
	}
	if s.anthropic {
		mux.HandleFunc("POST /v1/messages/batches", s.serveMessageBatchCreate)
		mux.HandleFunc("GET /v1/messages/batches/{id}", s.serveMessageBatchGet)
		mux.HandleFunc("GET /v1/messages/batches/{id}/results", s.serveMessageBatchResults)
		mux.HandleFunc("POST /v1/messages/batches/{id}/cancel", s.serveMessageBatchCancel)
		mux.HandleFunc("/", s.serveAnthropic)
		return mux
	}
	if s.gemini {
		mux.HandleFunc("/", s.serveGemini)
		return mux
	}
	if s.bedrock != nil {
		mux.HandleFunc("/", s.serveBedrock)
		return mux
	}
	mux.HandleFunc("POST "+CompletionsPath, s.serveCompletion)
	mux.HandleFunc("POST "+EmbeddingsPath, s.serveEmbeddings)
	mux.HandleFunc("POST /v1/files", s.serveFileUpload)
	mux.HandleFunc("GET /v1/files/{id}/content", s.serveFileContent)
	mux.HandleFunc("POST /v1/batches", s.serveBatchCreate)
	mux.HandleFunc("GET /v1/batches/{id}", s.serveBatchGet)
	mux.HandleFunc("POST /v1/batches/{id}/cancel", s.serveBatchCancel)
	return mux
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read body: "+err.Error(), "invalid_request_error", "")
		return
	}
	if s.apiKey != "" && s.azure == nil {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if got != s.apiKey {
			msg := "Incorrect API key provided."
			if s.echoKey {
				msg = "Incorrect API key provided: " + got + "."
			}
			writeError(w, http.StatusUnauthorized, msg, "invalid_request_error", "invalid_api_key")
			return
		}
	}
	req, err := parseRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "")
		return
	}

	req.Header = r.Header.Clone()
	reply, done := s.begin(w, r, req)
	if done {
		return
	}
	switch {
	case reply.Status >= 400:
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, msg, "server_error", "")
		return
	}

	out, err := json.Marshal(s.completion(req, reply))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "judgetest: "+err.Error(), "server_error", "")
		return
	}
	if reply.Truncate {
		out = out[:len(out)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusOr(reply.Status, http.StatusOK))
	w.Write(out) //nolint:errcheck
}

// pick records req and chooses its reply.
// begin answers what every wire format answers alike: it picks req's
// reply, waits as the reply asks, sets its headers and, for a raw body,
// writes the whole reply. done says nothing is left to write.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, req RecordedRequest) (reply Reply, done bool) {
	reply = s.pick(req)
	if s.wait(r, reply) {
		return reply, true
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.RawBody != "" {
		ct := reply.ContentType
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(statusOr(reply.Status, http.StatusOK))
		io.WriteString(w, reply.RawBody) //nolint:errcheck
		return reply, true
	}
	return reply, false
}

func (s *Server) pick(req RecordedRequest) Reply {
	s.mu.Lock()
	req.Seq = len(s.requests)
	if s.record {
		s.requests = append(s.requests, req)
	}
	replier := s.fallback
	for _, rl := range s.rules {
		if rl.match(req) {
			replier = rl.reply
			break
		}
	}
	s.mu.Unlock()
	return replier.ReplyTo(req)
}

// wait holds the reply for its latency, or for ever when it hangs; done
// says the request ended meanwhile and gets no reply.
func (s *Server) wait(r *http.Request, reply Reply) (done bool) {
	if reply.Latency > 0 {
		t := time.NewTimer(reply.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return true
		case <-s.closing:
			t.Stop()
			return true
		}
	}
	if reply.Hang {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return true
	}
	return false
}

func statusOr(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}

func writeError(w http.ResponseWriter, status int, message, typ, code string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": nilIfEmpty(code),
	}})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body) //nolint:errcheck
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// completion builds the wire reply for req.
func (s *Server) completion(req RecordedRequest, reply Reply) wireCompletion {
	n := max(req.N, 1)
	out := wireCompletion{
		ID:      fmt.Sprintf("chatcmpl-judgetest-%d", s.ids.Add(1)),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Model,
		Choices: make([]wireChoice, 0, n),
	}
	completionTokens := 0
	for i := range n {
		ch := reply.choice(i)
		content, tokens := ch.text()
		completionTokens += len(tokens)
		wc := wireChoice{
			Index:        i,
			Message:      wireMessage{Role: "assistant", Content: content},
			FinishReason: "stop",
		}
		if reply.FinishReason != "" {
			wc.FinishReason = reply.FinishReason
		}
		if ch.Refusal != "" {
			wc.Message.Refusal = &ch.Refusal
		}
		if req.Logprobs {
			wc.Logprobs = &wireLogprobs{Content: wireTokens(tokens, req.TopLogprobs)}
		}
		out.Choices = append(out.Choices, wc)
	}
	promptTokens := 0
	for _, m := range req.Messages {
		promptTokens += (len(m.Content) + 3) / 4
	}
	cached := 0
	if reply.Usage != nil {
		promptTokens, completionTokens, cached = reply.Usage.PromptTokens, reply.Usage.CompletionTokens, reply.Usage.CachedTokens
	}
	if !reply.NoUsage {
		out.Usage = &wireUsage{PromptTokens: promptTokens, CompletionTokens: completionTokens, TotalTokens: promptTokens + completionTokens}
		if cached > 0 {
			out.Usage.PromptTokensDetails = &wirePromptDetails{CachedTokens: cached}
		}
	}
	return out
}

// RecordedRequest is a request the server received, parsed.
type RecordedRequest struct {
	// Seq is the request's arrival index, from 0.
	Seq         int
	Model       string
	Messages    []abi.Message
	Logprobs    bool
	TopLogprobs int
	N           int
	Temperature *float64
	MaxTokens   int
	// ResponseFormat is nil when the request had none.
	ResponseFormat *ResponseFormat
	// Body is the raw request body.
	Body json.RawMessage
	// Header is the request's HTTP header (authentication included: a test
	// server's, never a real key).
	Header http.Header
	// ToolChoice is the tool an Anthropic request forces, if any.
	ToolChoice string
	// CacheBreakpoints are the blocks of an Anthropic request that carry
	// cache_control, by path: "tools.0", "system.0",
	// "messages.1.content.0".
	CacheBreakpoints []string
	// Embedding marks an embeddings request; Inputs are its texts (also
	// in Messages, as user messages, for the matchers).
	Embedding bool
	Inputs    []string
}

// ResponseFormat is the request's response_format.
type ResponseFormat struct {
	// Type is "text", "json_object" or "json_schema".
	Type       string          `json:"type"`
	JSONSchema *JSONSchemaSpec `json:"json_schema,omitempty"`
}

// JSONSchemaSpec is response_format.json_schema.
type JSONSchemaSpec struct {
	Name   string          `json:"name"`
	Strict *bool           `json:"strict,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// LastMessage is the content of the request's last message.
func (r RecordedRequest) LastMessage() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

func parseRequest(body []byte) (RecordedRequest, error) {
	var w struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Logprobs       bool            `json:"logprobs"`
		TopLogprobs    *int            `json:"top_logprobs"`
		N              *int            `json:"n"`
		Temperature    *float64        `json:"temperature"`
		MaxTokens      int             `json:"max_tokens"`
		MaxCompletion  int             `json:"max_completion_tokens"`
		ResponseFormat *ResponseFormat `json:"response_format"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return RecordedRequest{}, fmt.Errorf("invalid JSON body: %v", err)
	}
	if w.Model == "" {
		return RecordedRequest{}, errors.New("you must provide a model parameter")
	}
	if len(w.Messages) == 0 {
		return RecordedRequest{}, errors.New("messages: must not be empty")
	}
	req := RecordedRequest{
		Model:          w.Model,
		Logprobs:       w.Logprobs,
		Temperature:    w.Temperature,
		MaxTokens:      max(w.MaxTokens, w.MaxCompletion),
		ResponseFormat: w.ResponseFormat,
		Body:           append(json.RawMessage(nil), body...),
		N:              1,
	}
	if w.TopLogprobs != nil {
		if *w.TopLogprobs < 0 || *w.TopLogprobs > 20 {
			return RecordedRequest{}, errors.New("top_logprobs: must be between 0 and 20")
		}
		if !w.Logprobs {
			return RecordedRequest{}, errors.New("top_logprobs: logprobs must be true when top_logprobs is set")
		}
		req.TopLogprobs = *w.TopLogprobs
	}
	if w.N != nil {
		req.N = *w.N
	}
	for _, m := range w.Messages {
		req.Messages = append(req.Messages, abi.Message{Role: m.Role, Content: messageText(m.Content)})
	}
	return req, nil
}

// messageText reads content given as a string or as an array of text parts.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

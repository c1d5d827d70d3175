package judgetest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Embeddings: every wire format's embeddings endpoint answers with
// EmbeddingOf each input (or the function WithEmbeddings sets). Requests
// are recorded (Inputs set, Embedding true) and counted, and rules apply
// to them as to completions, so a rule's Status, RetryAfter, Latency or
// RawBody faults them; a rule's content is not used.

// EmbeddingDims is the length of EmbeddingOf's vectors.
const EmbeddingDims = 8

// EmbeddingOf is the default vector of text: EmbeddingDims values in
// [-0.5, 0.5] from its SHA-256, so equal texts get equal vectors and a
// test can compute what a text embeds to.
func EmbeddingOf(text string) []float64 {
	sum := sha256.Sum256([]byte(text))
	v := make([]float64, EmbeddingDims)
	for i := range v {
		v[i] = float64(sum[i])/255 - 0.5
	}
	return v
}

// WithEmbeddings makes f the vector of each embedded text.
func WithEmbeddings(f func(model, text string) []float64) Option {
	return func(s *Server) { s.embedFn = f }
}

func (s *Server) vector(model, text string) []float64 {
	if s.embedFn != nil {
		return s.embedFn(model, text)
	}
	return EmbeddingOf(text)
}

// serveEmbedRequest records an embeddings request and picks its reply: a
// fault (written, done) or the vectors to send.
func (s *Server) serveEmbedRequest(w http.ResponseWriter, r *http.Request, model string, inputs []string, body []byte,
	writeError func(status int, msg string)) (vectors [][]float64, done bool) {
	req := RecordedRequest{Model: model, N: 1, Embedding: true, Inputs: inputs, Body: body, Header: r.Header.Clone()}
	for _, in := range inputs {
		req.Messages = append(req.Messages, abiUser(in))
	}
	reply, done := s.begin(w, r, req)
	if done {
		return nil, true
	}
	if reply.Status >= 400 {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(reply.Status, msg)
		return nil, true
	}
	for _, in := range inputs {
		vectors = append(vectors, s.vector(model, in))
	}
	return vectors, false
}

// serveOpenAIEmbeddings is POST /v1/embeddings (and Azure's
// /openai/deployments/{d}/embeddings): input a string or a list of
// strings, encoding_format float only.
func (s *Server) serveOpenAIEmbeddings(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
		User           string          `json:"user"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid body: "+err.Error(), "invalid_request_error", "")
		return
	}
	var inputs []string
	if json.Unmarshal(req.Input, &inputs) != nil {
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			writeError(w, http.StatusBadRequest, "'input' must be a string or an array of strings", "invalid_request_error", "")
			return
		}
		inputs = []string{one}
	}
	switch {
	case req.Model == "":
		writeError(w, http.StatusBadRequest, "you must provide a model parameter", "invalid_request_error", "")
		return
	case len(inputs) == 0 || len(inputs) > 2048:
		writeError(w, http.StatusBadRequest, "'input' must hold 1 to 2048 strings", "invalid_request_error", "")
		return
	case req.EncodingFormat != "" && req.EncodingFormat != "float":
		writeError(w, http.StatusBadRequest, "judgetest serves encoding_format float only", "invalid_request_error", "")
		return
	}
	for i, in := range inputs {
		if in == "" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("'input'[%d] is empty", i), "invalid_request_error", "")
			return
		}
	}
	vectors, done := s.serveEmbedRequest(w, r, req.Model, inputs, body, func(status int, msg string) {
		writeError(w, status, msg, "server_error", "")
	})
	if done {
		return
	}
	data := make([]any, len(vectors))
	tokens := 0
	for i, v := range vectors {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
		tokens += (len(inputs[i]) + 3) / 4
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}})
}

func abiUser(text string) abi.Message { return abi.Message{Role: "user", Content: text} }

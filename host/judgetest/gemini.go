package judgetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// GeminiAPIVersion is the API version a Gemini server answers.
const GeminiAPIVersion = "v1beta"

// Gemini makes the server speak the Gemini API instead of OpenAI's: POST
// /v1beta/models/{model}:generateContent, the key (WithAPIKey) in the
// x-goog-api-key header. It checks what the real API checks and refuses
// the rest in Google's error shape ({"error": {"code", "message",
// "status"}}): another path or version 404 NOT_FOUND; streaming
// (:streamGenerateContent, alt=sse) 400; a key in the URL's query 400; no
// key 403 PERMISSION_DENIED, a wrong one 400 INVALID_ARGUMENT with reason
// API_KEY_INVALID (as the API answers); a body that is not JSON or has an
// unknown field ("Invalid JSON payload received. Unknown name …"); no
// contents, a role other than user or model, a part without text;
// generationConfig out of range (temperature 0..2, candidateCount 1..8,
// logprobs 0..20 and only with responseLogprobs, maxOutputTokens ≥ 1), a
// responseMimeType it does not know, a schema without an application/json
// MIME type, responseSchema and responseJsonSchema together. Rules and
// replies work as for the OpenAI wire: candidateCount candidates,
// logprobsResult when responseLogprobs asks; FinishReason "length" is
// MAX_TOKENS, Refusal a SAFETY stop without content. Retry-After also
// travels in the error's google.rpc.RetryInfo, where the API puts it. The
// URL is the root (the SDK adds /v1beta/models/…).
func Gemini() Option { return func(s *Server) { s.gemini = true } }

// geminiGenerationConfig is generationConfig as the API knows it.
type geminiGenerationConfig struct {
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"topP"`
	TopK               *float64        `json:"topK"`
	CandidateCount     *int            `json:"candidateCount"`
	MaxOutputTokens    *int            `json:"maxOutputTokens"`
	StopSequences      []string        `json:"stopSequences"`
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	ResponseLogprobs   *bool           `json:"responseLogprobs"`
	Logprobs           *int            `json:"logprobs"`
	Seed               *int            `json:"seed"`
	PresencePenalty    *float64        `json:"presencePenalty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty"`
	ThinkingConfig     json.RawMessage `json:"thinkingConfig"`
	ResponseModalities []string        `json:"responseModalities"`
	MediaResolution    string          `json:"mediaResolution"`
}

type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text *string `json:"text"`
	} `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent         `json:"contents"`
	SystemInstruction *geminiContent          `json:"systemInstruction"`
	GenerationConfig  *geminiGenerationConfig `json:"generationConfig"`
	SafetySettings    json.RawMessage         `json:"safetySettings"`
	Tools             json.RawMessage         `json:"tools"`
	ToolConfig        json.RawMessage         `json:"toolConfig"`
	CachedContent     string                  `json:"cachedContent"`
}

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	prefix := "/" + GeminiAPIVersion + "/models/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	model, method, _ := strings.Cut(rest, ":")
	switch {
	case r.Method != http.MethodPost || !ok || model == "" || strings.Contains(model, "/"):
		writeGeminiError(w, http.StatusNotFound, "NOT_FOUND", "", fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path))
		return
	case method == "streamGenerateContent" || r.URL.Query().Has("alt"):
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "streaming: judgetest serves no streams, and the judge never asks for one")
		return
	case method == "batchEmbedContents":
		if !s.geminiAuth(w, r) {
			return
		}
		s.serveGeminiEmbeddings(w, r, model)
		return
	case method != "generateContent":
		writeGeminiError(w, http.StatusNotFound, "NOT_FOUND", "", fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path))
		return
	case r.URL.Query().Has("key"):
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "judgetest refuses a key in the URL (?key=), where logs and proxies keep it: send x-goog-api-key")
		return
	}
	if !s.geminiAuth(w, r) {
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "Invalid JSON payload received: Content-Type must be application/json")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "cannot read body: "+err.Error())
		return
	}
	req, err := parseGemini(model, body)
	if err != nil {
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", err.Error())
		return
	}
	req.Header = r.Header.Clone()
	reply, done := s.begin(w, r, req)
	if done {
		return
	}
	if reply.Status >= 400 {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		status := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
			429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[reply.Status]
		if status == "" {
			status = "UNKNOWN"
		}
		e := map[string]any{"code": reply.Status, "message": msg, "status": status}
		if reply.RetryAfter != "" {
			e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": reply.RetryAfter + "s"}}
		}
		writeJSON(w, reply.Status, map[string]any{"error": e})
		return
	}
	out, err := json.Marshal(s.geminiResponse(req, reply))
	if err != nil {
		writeGeminiError(w, http.StatusInternalServerError, "INTERNAL", "", "judgetest: "+err.Error())
		return
	}
	if reply.Truncate {
		out = out[:len(out)/2]
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(statusOr(reply.Status, http.StatusOK))
	w.Write(out) //nolint:errcheck
}

// geminiAuth checks the key as the API does, answering when it fails.
func (s *Server) geminiAuth(w http.ResponseWriter, r *http.Request) bool {
	if s.apiKey == "" {
		return true
	}
	switch got := r.Header.Get("X-Goog-Api-Key"); {
	case got == "":
		writeGeminiError(w, http.StatusForbidden, "PERMISSION_DENIED", "",
			"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return false
	case got != s.apiKey:
		msg := "API key not valid. Please pass a valid API key."
		if s.echoKey {
			msg += " Got: " + got
		}
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API_KEY_INVALID", msg)
		return false
	}
	return true
}

// serveGeminiEmbeddings is batchEmbedContents: every request names the
// model of the path, at most 100 of them, text parts only.
func (s *Server) serveGeminiEmbeddings(w http.ResponseWriter, r *http.Request, model string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "cannot read body: "+err.Error())
		return
	}
	var req struct {
		Requests []struct {
			Model                string        `json:"model"`
			Content              geminiContent `json:"content"`
			TaskType             string        `json:"taskType"`
			Title                string        `json:"title"`
			OutputDimensionality *int          `json:"outputDimensionality"`
		} `json:"requests"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(req.Requests) == 0 || len(req.Requests) > 100 {
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch, and at least one")
		return
	}
	inputs := make([]string, len(req.Requests))
	for i, q := range req.Requests {
		if q.Model != "models/"+model {
			writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "",
				fmt.Sprintf("* BatchEmbedContentsRequest.model: requests[%d].model %q does not match the batch's models/%s", i, q.Model, model))
			return
		}
		text, err := geminiText(q.Content, fmt.Sprintf("requests[%d].content", i))
		if err != nil {
			writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", err.Error())
			return
		}
		inputs[i] = text
	}
	vectors, done := s.serveEmbedRequest(w, r, model, inputs, body, func(status int, msg string) {
		writeGeminiError(w, status, map[int]string{429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}[status], "", msg)
	})
	if done {
		return
	}
	out := make([]any, len(vectors))
	for i, v := range vectors {
		out[i] = map[string]any{"values": v}
	}
	writeJSON(w, http.StatusOK, map[string]any{"embeddings": out})
}

// parseGemini checks a generateContent request as the API does and
// records it.
func parseGemini(model string, body []byte) (RecordedRequest, error) {
	var g geminiRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return RecordedRequest{}, fmt.Errorf("Invalid JSON payload received. Unknown name %s: Cannot find field.", field)
		}
		return RecordedRequest{}, fmt.Errorf("Invalid JSON payload received. %v", err)
	}
	if dec.More() {
		return RecordedRequest{}, errors.New("Invalid JSON payload received. Unexpected token after the object.")
	}
	if len(g.Contents) == 0 {
		return RecordedRequest{}, errors.New("* GenerateContentRequest.contents: contents is not specified")
	}
	req := RecordedRequest{Model: model, N: 1, Body: append(json.RawMessage(nil), body...)}
	if si := g.SystemInstruction; si != nil {
		text, err := geminiText(*si, "system_instruction")
		if err != nil {
			return RecordedRequest{}, err
		}
		req.Messages = append(req.Messages, abi.Message{Role: "system", Content: text})
	}
	for i, c := range g.Contents {
		role := "user"
		switch c.Role {
		case "", "user":
		case "model":
			role = "assistant"
		default:
			return RecordedRequest{}, fmt.Errorf("* GenerateContentRequest.contents[%d].role: Please use a valid role: user, model.", i)
		}
		text, err := geminiText(c, fmt.Sprintf("contents[%d]", i))
		if err != nil {
			return RecordedRequest{}, err
		}
		req.Messages = append(req.Messages, abi.Message{Role: role, Content: text})
	}
	gc := g.GenerationConfig
	if gc == nil {
		return req, nil
	}
	switch {
	case gc.Temperature != nil && (*gc.Temperature < 0 || *gc.Temperature > 2):
		return RecordedRequest{}, fmt.Errorf("* GenerateContentRequest.generation_config.temperature: must be in the range [0.0, 2.0], got %g", *gc.Temperature)
	case gc.CandidateCount != nil && (*gc.CandidateCount < 1 || *gc.CandidateCount > 8):
		return RecordedRequest{}, fmt.Errorf("* GenerateContentRequest.generation_config.candidate_count: must be in the range [1, 8], got %d", *gc.CandidateCount)
	case gc.MaxOutputTokens != nil && *gc.MaxOutputTokens < 1:
		return RecordedRequest{}, errors.New("* GenerateContentRequest.generation_config.max_output_tokens: must be positive")
	case gc.Logprobs != nil && (*gc.Logprobs < 0 || *gc.Logprobs > 20):
		return RecordedRequest{}, fmt.Errorf("* GenerateContentRequest.generation_config.logprobs: must be in the range [0, 20], got %d", *gc.Logprobs)
	case gc.Logprobs != nil && (gc.ResponseLogprobs == nil || !*gc.ResponseLogprobs):
		return RecordedRequest{}, errors.New("* GenerateContentRequest.generation_config.logprobs: only valid if response_logprobs is true")
	case len(gc.ResponseSchema) > 0 && len(gc.ResponseJSONSchema) > 0:
		return RecordedRequest{}, errors.New("* GenerateContentRequest.generation_config: response_schema and response_json_schema cannot both be set")
	}
	switch gc.ResponseMimeType {
	case "", "text/plain", "application/json", "text/x.enum":
	default:
		return RecordedRequest{}, fmt.Errorf("* GenerateContentRequest.generation_config.response_mime_type: allowed mimetypes are `text/plain`, `application/json`, `text/x.enum`; got %q", gc.ResponseMimeType)
	}
	schema := gc.ResponseJSONSchema
	if len(schema) == 0 {
		schema = gc.ResponseSchema
	}
	if len(schema) > 0 && gc.ResponseMimeType != "application/json" && gc.ResponseMimeType != "text/x.enum" {
		return RecordedRequest{}, errors.New("* GenerateContentRequest.generation_config.response_mime_type: response_mime_type must be application/json or text/x.enum when a response schema is set")
	}
	req.Temperature = gc.Temperature
	if gc.MaxOutputTokens != nil {
		req.MaxTokens = *gc.MaxOutputTokens
	}
	if gc.CandidateCount != nil {
		req.N = *gc.CandidateCount
	}
	if gc.ResponseLogprobs != nil && *gc.ResponseLogprobs {
		req.Logprobs = true
		if gc.Logprobs != nil {
			req.TopLogprobs = *gc.Logprobs
		}
	}
	switch {
	case len(schema) > 0:
		req.ResponseFormat = &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaSpec{Schema: schema}}
	case gc.ResponseMimeType == "application/json":
		req.ResponseFormat = &ResponseFormat{Type: "json_object"}
	}
	return req, nil
}

// geminiText reads a content's parts, which must all be text.
func geminiText(c geminiContent, where string) (string, error) {
	if len(c.Parts) == 0 {
		return "", fmt.Errorf("* GenerateContentRequest.%s.parts: contents.parts must not be empty.", where)
	}
	var b strings.Builder
	for i, p := range c.Parts {
		if p.Text == nil {
			return "", fmt.Errorf("* GenerateContentRequest.%s.parts[%d].data: required oneof field 'data' must have one initialized field (judgetest serves text parts only)", where, i)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

// geminiResponse builds the GenerateContentResponse to req.
func (s *Server) geminiResponse(req RecordedRequest, reply Reply) map[string]any {
	n := max(req.N, 1)
	candidates := make([]any, 0, n)
	outTokens := 0
	for i := range n {
		ch := reply.choice(i)
		content, tokens := ch.text()
		outTokens += len(tokens)
		cand := map[string]any{"index": i, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": content}}}}
		switch {
		case ch.Refusal != "":
			delete(cand, "content")
			cand["finishReason"] = "SAFETY"
			cand["safetyRatings"] = []any{map[string]any{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}}
		case reply.FinishReason == "length":
			cand["finishReason"] = "MAX_TOKENS"
		}
		if req.Logprobs && ch.Refusal == "" {
			chosen := make([]any, len(tokens))
			top := make([]any, len(tokens))
			for k, t := range tokens {
				chosen[k] = map[string]any{"token": t.Token, "tokenId": k, "logProbability": t.Logprob}
				alts := t.Top
				if len(alts) > req.TopLogprobs {
					alts = alts[:req.TopLogprobs]
				}
				list := make([]any, len(alts))
				for a, alt := range alts {
					list[a] = map[string]any{"token": alt.Token, "tokenId": 1000 + a, "logProbability": alt.Logprob}
				}
				top[k] = map[string]any{"candidates": list}
			}
			cand["logprobsResult"] = map[string]any{"chosenCandidates": chosen, "topCandidates": top}
		}
		candidates = append(candidates, cand)
	}
	in := 0
	for _, m := range req.Messages {
		in += (len(m.Content) + 3) / 4
	}
	cached := 0
	if reply.Usage != nil {
		in, outTokens, cached = reply.Usage.PromptTokens, reply.Usage.CompletionTokens, reply.Usage.CachedTokens
	}
	out := map[string]any{
		"candidates":   candidates,
		"modelVersion": req.Model,
		"responseId":   fmt.Sprintf("judgetest-%d", s.ids.Add(1)),
	}
	if !reply.NoUsage {
		u := map[string]any{"promptTokenCount": in, "candidatesTokenCount": outTokens, "totalTokenCount": in + outTokens}
		if cached > 0 {
			u["cachedContentTokenCount"] = cached
		}
		out["usageMetadata"] = u
	}
	return out
}

// writeGeminiError writes Google's error shape; reason, when set, is an
// ErrorInfo detail (API_KEY_INVALID).
func writeGeminiError(w http.ResponseWriter, status int, code, reason, message string) {
	e := map[string]any{"code": status, "message": message, "status": code}
	if reason != "" {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "googleapis.com"}}
	}
	writeJSON(w, status, map[string]any{"error": e})
}

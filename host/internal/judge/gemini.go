package judge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"google.golang.org/genai"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

// geminiProvider is Google's Gemini API (generateContent) through
// google.golang.org/genai: the SDK builds the request from its typed
// parameters and sends it (its x-goog-api-key header, base URL, API
// version and path), its own retries off; the reply is captured raw
// (capture.go) and decoded strictly here, as the OpenAI wire's is.
//
// The API has what the judge needs: structured output is
// responseMimeType application/json with responseJsonSchema (the
// request's JSON Schema as it is), JSON mode the MIME type alone;
// logprobs are responseLogprobs with logprobs alternatives (models that
// do not support them refuse the request: supports_logprobs says which
// do); several replies are candidateCount.
type geminiProvider struct {
	models *genai.Models // nil: no API key (setupErr says so)
	model  string
	// setupErr fails every attempt when the client could not be built.
	setupErr error
}

// geminiAPIVersion is the Gemini API version called: v1beta carries
// responseJsonSchema and logprobs.
const geminiAPIVersion = "v1beta"

func newGeminiProvider(cfg Config, httpClient *http.Client, apiKey string, headers http.Header) *geminiProvider {
	g := &geminiProvider{model: cfg.Model}
	if apiKey == "" {
		// The SDK would take GOOGLE_API_KEY or GEMINI_API_KEY from the
		// process's environment: the judge's config decides the key.
		g.setupErr = errors.New("no API key: the Gemini API needs one")
		return g
	}
	timeout := cfg.Timeout.Std()
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     apiKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: capturingClient(httpClient),
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    cfg.BaseURL + "/",
			APIVersion: geminiAPIVersion,
			Headers:    headers.Clone(),
			Timeout:    &timeout,
			// nil RetryOptions: one HTTP request per call, the judge's
			// retry layer is the only one.
		},
	})
	if err != nil {
		g.setupErr = fmt.Errorf("gemini client: %w", err)
		return g
	}
	g.models = client.Models
	return g
}

// geminiCall is a call's parameters as encode hands them to attempt: the
// SDK's own types, in their JSON.
type geminiCall struct {
	Contents []*genai.Content             `json:"contents"`
	Config   *genai.GenerateContentConfig `json:"config"`
}

func (g *geminiProvider) encode(p *plan, c call, mode schemaMode) ([]byte, error) {
	cfg := &genai.GenerateContentConfig{}
	if c.temperature != nil {
		t := float32(*c.temperature)
		cfg.Temperature = &t
	}
	if p.maxTokens > 0 {
		cfg.MaxOutputTokens = int32(min(p.maxTokens, 1<<31-1))
	}
	if c.n > 1 {
		cfg.CandidateCount = int32(min(c.n, 1<<31-1))
	}
	if p.topLogprobs > 0 {
		n := int32(p.topLogprobs)
		cfg.ResponseLogprobs, cfg.Logprobs = true, &n
	}
	var contents []*genai.Content
	var system []string
	for _, m := range p.messagesFor(c, mode) {
		role := wireRole(m)
		if role == "system" {
			system = append(system, m.Content)
			continue
		}
		if role == "assistant" {
			role = genai.RoleModel
		}
		// Consecutive messages of one role are one turn.
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, genai.NewPartFromText(m.Content))
			continue
		}
		contents = append(contents, &genai.Content{Role: role, Parts: []*genai.Part{genai.NewPartFromText(m.Content)}})
	}
	if len(system) > 0 {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{genai.NewPartFromText(strings.Join(system, "\n\n"))}}
	}
	if p.schema != nil {
		switch mode {
		case modeJSONSchema:
			cfg.ResponseMIMEType = "application/json"
			cfg.ResponseJsonSchema = jsontext.Value(p.schema.canonical)
		case modeJSONObject:
			cfg.ResponseMIMEType = "application/json"
		}
	}
	return json.Marshal(geminiCall{Contents: contents, Config: cfg})
}

func (g *geminiProvider) attempt(ctx context.Context, body []byte, need openaiwire.Need) (completion, *failure, *http.Response, error) {
	if g.setupErr != nil {
		return completion{}, &failure{kind: failAuth, detail: g.setupErr.Error()}, nil, nil
	}
	var gc geminiCall
	if err := json.Unmarshal(body, &gc); err != nil {
		return completion{}, &failure{kind: failRejected, detail: "request cannot be decoded: " + err.Error()}, nil, nil
	}
	var got captured
	_, err := g.models.GenerateContent(withCapture(ctx, &got), g.model, gc.Contents, gc.Config)
	if got.resp != nil && got.readErr == nil && got.resp.StatusCode == http.StatusBadRequest && bytes.Contains(got.body, []byte(`"API_KEY_INVALID"`)) {
		// The API answers a wrong key 400, not 401: still a failure no
		// retry can fix, which the breaker counts.
		return completion{}, &failure{kind: failAuth, status: got.resp.StatusCode, detail: serverWords(got.body)}, nil, nil
	}
	if f, resp, err, ok := got.outcome(err, geminiRefused(ctx)); !ok {
		return completion{}, f, resp, err
	}
	// The SDK's decoding (lenient) is passed over: the body is decoded
	// here, strictly.
	c, f := decodeGemini(got.resp.Header.Get("Content-Type"), got.body)
	if f != nil {
		f.status = got.resp.StatusCode
	}
	return c, f, nil, nil
}

// geminiRefused says how to count an error genai returned without a
// reply: a request it refused itself is rejected; a transport fault or
// the context's end is the retry layer's (nil).
func geminiRefused(ctx context.Context) func(error) *failure {
	return func(err error) *failure {
		var transport *url.Error
		if err == nil || errors.As(err, &transport) || ctx.Err() != nil {
			return nil
		}
		return &failure{kind: failRejected, detail: oneLine(err.Error())}
	}
}

// geminiReply is what the judge reads of a GenerateContentResponse. Other
// fields are passed over; those read are decoded strictly.
type geminiReply struct {
	Candidates []struct {
		Content *struct {
			Parts []struct {
				Text    string `json:"text"`
				Thought bool   `json:"thought"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason   string `json:"finishReason"`
		FinishMessage  string `json:"finishMessage"`
		LogprobsResult *struct {
			TopCandidates []struct {
				Candidates []geminiLogprob `json:"candidates"`
			} `json:"topCandidates"`
			ChosenCandidates []geminiLogprob `json:"chosenCandidates"`
		} `json:"logprobsResult"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	Error jsontext.Value `json:"error"`
}

type geminiLogprob struct {
	Token          string  `json:"token"`
	LogProbability float64 `json:"logProbability"`
}

// errNotGemini is a 2xx body that is JSON but no reply.
var errNotGemini = errors.New("no candidates and no prompt feedback")

// decodeGemini reads a 2xx generateContent body into a completion, one
// choice per candidate: its text parts (thoughts left out), its logprobs
// as the OpenAI wire's (chosen token, top alternatives at its position).
// finishReason MAX_TOKENS is "length"; a safety or policy stop, or a
// prompt blocked before any candidate, is "content_filter".
func decodeGemini(contentType string, body []byte) (completion, *failure) {
	if f := notJSON(contentType, body); f != nil {
		return completion{}, f
	}
	var r geminiReply
	err := json.Unmarshal(body, &r)
	switch {
	case err == nil && len(r.Error) > 0:
		return completion{}, &failure{kind: failErrorBody, detail: serverWords(body)}
	case err == nil && len(r.Candidates) == 0 && (r.PromptFeedback == nil || r.PromptFeedback.BlockReason == ""):
		err = errNotGemini
	}
	if err != nil {
		return completion{}, &failure{kind: failUnparseable, detail: withWords("the body is not a generateContent reply: "+err.Error(), body)}
	}
	var c completion
	if len(r.Candidates) == 0 {
		why := "the prompt was blocked: " + r.PromptFeedback.BlockReason
		if m := r.PromptFeedback.BlockReasonMessage; m != "" {
			why += " (" + m + ")"
		}
		c.choices = []choice{{finishReason: "content_filter", refusal: why}}
	}
	for _, cand := range r.Candidates {
		var text strings.Builder
		if cand.Content != nil {
			for _, part := range cand.Content.Parts {
				if !part.Thought {
					text.WriteString(part.Text)
				}
			}
		}
		ch := choice{content: text.String(), finishReason: "stop"}
		switch cand.FinishReason {
		case "MAX_TOKENS":
			ch.finishReason = "length"
		case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
			ch.finishReason = "content_filter"
		}
		if lr := cand.LogprobsResult; lr != nil && len(lr.ChosenCandidates) > 0 {
			ch.tokens = make([]abi.TokenLogprob, len(lr.ChosenCandidates))
			for i, tok := range lr.ChosenCandidates {
				t := abi.TokenLogprob{Token: tok.Token, Logprob: tok.LogProbability}
				if i < len(lr.TopCandidates) {
					alts := lr.TopCandidates[i].Candidates
					t.Top = make([]abi.TopLogprob, len(alts))
					for k, a := range alts {
						t.Top[k] = abi.TopLogprob{Token: a.Token, Logprob: a.LogProbability}
					}
				}
				ch.tokens[i] = t
			}
		}
		c.choices = append(c.choices, ch)
	}
	if u := r.UsageMetadata; u != nil && (u.PromptTokenCount > 0 || u.CandidatesTokenCount > 0) {
		c.inputTokens = max(u.PromptTokenCount, 0)
		c.cachedInputTokens = min(max(u.CachedContentTokenCount, 0), c.inputTokens)
		// Thinking is billed as output.
		c.outputTokens = max(u.CandidatesTokenCount, 0) + max(u.ThoughtsTokenCount, 0)
		c.usageKnown = true
	}
	return c, nil
}

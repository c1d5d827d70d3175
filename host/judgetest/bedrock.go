package judgetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agentanvil/anvil/abi"
)

// bedrockSpec is what a Bedrock runtime endpoint serves: one region, one
// test credential.
type bedrockSpec struct {
	region, accessKeyID, secretAccessKey string
}

// BedrockService is the name Bedrock runtime requests are signed for.
const BedrockService = "bedrock"

// Bedrock makes the server Amazon Bedrock's runtime in region, speaking
// the Converse API: POST /model/{modelId}/converse, signed with SigV4 for
// service bedrock and region with the test credential accessKeyID /
// secretAccessKey. The signature is recomputed with aws-sdk-go-v2's v4
// signer over the headers the request says it signed, and anything else
// fails as Bedrock fails it (403 in the API's shape, {"message": …} with
// the x-amzn-ErrorType header): no or a malformed Authorization
// (MissingAuthenticationTokenException), another access key
// (UnrecognizedClientException), another region or service in the
// credential scope, a signature that does not match or a signing time
// more than 15 minutes off (InvalidSignatureException). The body is
// checked as the API checks it (400 ValidationException): an unknown
// field, no messages, a role other than user or assistant, a first
// message not from the user, roles that do not alternate, a content
// block that is not text, maxTokens < 1, temperature outside 0..1, a
// tool whose inputSchema.json is not an object schema, a toolChoice
// naming no tool. Streaming (/converse-stream) is refused. Rules and
// replies work as for the OpenAI wire; a reply to a request forcing a
// tool whose Content is a JSON object comes back as that tool's toolUse
// block, any other Content as a text block. FinishReason "length" is
// stopReason max_tokens; Refusal is stopReason guardrail_intervened. The
// URL is the root (the endpoint override).
func Bedrock(region, accessKeyID, secretAccessKey string) Option {
	return func(s *Server) {
		s.bedrock = &bedrockSpec{region: region, accessKeyID: accessKeyID, secretAccessKey: secretAccessKey}
	}
}

// bedrockSkew is how far a request's signing time may be from now (AWS
// allows 15 minutes).
const bedrockSkew = 15 * time.Minute

type bedrockContent struct {
	Text    *string         `json:"text"`
	ToolUse json.RawMessage `json:"toolUse"`
	Image   json.RawMessage `json:"image"`
}

type bedrockRequest struct {
	Messages []struct {
		Role    string           `json:"role"`
		Content []bedrockContent `json:"content"`
	} `json:"messages"`
	System []struct {
		Text *string `json:"text"`
	} `json:"system"`
	InferenceConfig *struct {
		MaxTokens     *int     `json:"maxTokens"`
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"topP"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		ToolChoice *struct {
			Auto json.RawMessage `json:"auto"`
			Any  json.RawMessage `json:"any"`
			Tool *struct {
				Name string `json:"name"`
			} `json:"tool"`
		} `json:"toolChoice"`
	} `json:"toolConfig"`
	AdditionalModelRequestFields      json.RawMessage `json:"additionalModelRequestFields"`
	AdditionalModelResponseFieldPaths []string        `json:"additionalModelResponseFieldPaths"`
	GuardrailConfig                   json.RawMessage `json:"guardrailConfig"`
	PromptVariables                   json.RawMessage `json:"promptVariables"`
	RequestMetadata                   json.RawMessage `json:"requestMetadata"`
	PerformanceConfig                 json.RawMessage `json:"performanceConfig"`
}

func (s *Server) serveBedrock(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeBedrockError(w, http.StatusBadRequest, "ValidationException", "cannot read body: "+err.Error())
		return
	}
	if status, typ, msg := s.bedrock.verify(r, body); status != 0 {
		if s.echoKey {
			msg += " Authorization: " + r.Header.Get("Authorization")
		}
		writeBedrockError(w, status, typ, msg)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/model/")
	model, op, _ := strings.Cut(rest, "/")
	switch {
	case r.Method != http.MethodPost || !ok || model == "":
		writeBedrockError(w, http.StatusNotFound, "UnknownOperationException", "")
		return
	case op == "converse-stream" || op == "invoke-with-response-stream":
		writeBedrockError(w, http.StatusBadRequest, "ValidationException", "streaming: judgetest serves no streams, and the judge never asks for one")
		return
	case op == "invoke":
		s.serveBedrockEmbeddings(w, r, model, body)
		return
	case op != "converse":
		writeBedrockError(w, http.StatusNotFound, "UnknownOperationException", "")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeBedrockError(w, http.StatusUnsupportedMediaType, "UnsupportedMediaTypeException", "Content-Type must be application/json")
		return
	}
	req, toolName, err := parseBedrock(model, body)
	if err != nil {
		writeBedrockError(w, http.StatusBadRequest, "ValidationException", err.Error())
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
		typ := map[int]string{400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
			408: "ModelTimeoutException", 424: "ModelErrorException", 429: "ThrottlingException", 500: "InternalServerException",
			503: "ServiceUnavailableException"}[reply.Status]
		if typ == "" {
			typ = "InternalServerException"
		}
		writeBedrockError(w, reply.Status, typ, msg)
		return
	}
	out, err := json.Marshal(s.bedrockResponse(req, toolName, reply))
	if err != nil {
		writeBedrockError(w, http.StatusInternalServerError, "InternalServerException", "judgetest: "+err.Error())
		return
	}
	if reply.Truncate {
		out = out[:len(out)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", fmt.Sprintf("judgetest-%d", s.ids.Add(1)))
	w.WriteHeader(statusOr(reply.Status, http.StatusOK))
	w.Write(out) //nolint:errcheck
}

// verify checks r's SigV4 signature as AWS does: the credential scope,
// the signing time, and the signature recomputed over the headers the
// request lists as signed, with the test secret. A zero status is a
// request that may pass.
func (b *bedrockSpec) verify(r *http.Request, body []byte) (status int, typ, msg string) {
	const denied = http.StatusForbidden
	auth := r.Header.Get("Authorization")
	algo, rest, _ := strings.Cut(auth, " ")
	if algo != "AWS4-HMAC-SHA256" {
		return denied, "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	parts := map[string]string{}
	for _, p := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		parts[k] = v
	}
	scope := strings.Split(parts["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || parts["SignedHeaders"] == "" || parts["Signature"] == "" {
		return denied, "IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters."
	}
	if scope[0] != b.accessKeyID {
		return denied, "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	if scope[2] != b.region || scope[3] != BedrockService {
		return denied, "InvalidSignatureException", fmt.Sprintf("Credential should be scoped to a valid region and service: want %s/%s, got %s/%s", b.region, BedrockService, scope[2], scope[3])
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || at.Format("20060102") != scope[1] {
		return denied, "IncompleteSignatureException", "X-Amz-Date is missing or does not match the credential scope's date"
	}
	if d := time.Since(at); d > bedrockSkew || d < -bedrockSkew {
		return denied, "InvalidSignatureException", "Signature expired: " + r.Header.Get("X-Amz-Date") + " is now earlier or later than the allowed skew"
	}
	// The request as signed: its method, escaped path and query, the
	// signed headers only.
	signed := strings.Split(parts["SignedHeaders"], ";")
	u, err := url.Parse("http://" + r.Host + r.RequestURI)
	if err != nil {
		return denied, "InvalidSignatureException", "bad request URI"
	}
	again, _ := http.NewRequestWithContext(context.Background(), r.Method, u.String(), bytes.NewReader(body))
	again.URL = u
	again.Host = r.Host
	again.ContentLength = 0
	again.Header = http.Header{}
	for _, h := range signed {
		switch h {
		case "host":
		case "content-length":
			again.ContentLength = int64(len(body))
		case "x-amz-date":
		default:
			vals := r.Header.Values(h)
			if len(vals) == 0 {
				return denied, "InvalidSignatureException", "signed header " + h + " is missing"
			}
			again.Header[http.CanonicalHeaderKey(h)] = vals
		}
	}
	if !containsHeader(signed, "host") || !containsHeader(signed, "x-amz-date") {
		return denied, "InvalidSignatureException", "host and x-amz-date must be signed"
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: b.accessKeyID, SecretAccessKey: b.secretAccessKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), BedrockService, b.region, at); err != nil {
		return denied, "InvalidSignatureException", err.Error()
	}
	want := again.Header.Get("Authorization")
	if want != auth {
		return denied, "InvalidSignatureException",
			"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	}
	return 0, "", ""
}

func containsHeader(list []string, h string) bool {
	for _, v := range list {
		if v == h {
			return true
		}
	}
	return false
}

// parseBedrock checks a Converse request as the API does and records
// it; toolName is the tool it forces, if any.
func parseBedrock(model string, body []byte) (RecordedRequest, string, error) {
	var b bedrockRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return RecordedRequest{}, "", fmt.Errorf("Malformed input request: extraneous key [%s] is not permitted", strings.Trim(field, `"`))
		}
		return RecordedRequest{}, "", fmt.Errorf("Malformed input request: %v", err)
	}
	if len(b.Messages) == 0 {
		return RecordedRequest{}, "", errors.New("The messages field is required")
	}
	req := RecordedRequest{Model: model, N: 1, Body: append(json.RawMessage(nil), body...)}
	if len(b.System) > 0 {
		var sys strings.Builder
		for i, s := range b.System {
			if s.Text == nil {
				return RecordedRequest{}, "", fmt.Errorf("system.%d: judgetest serves text system blocks only", i)
			}
			sys.WriteString(*s.Text)
		}
		req.Messages = append(req.Messages, abi.Message{Role: "system", Content: sys.String()})
	}
	for i, m := range b.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return RecordedRequest{}, "", fmt.Errorf("1 validation error detected: Value '%s' at 'messages.%d.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, i+1)
		}
		if i == 0 && m.Role != "user" {
			return RecordedRequest{}, "", errors.New("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		}
		if i > 0 && b.Messages[i-1].Role == m.Role {
			return RecordedRequest{}, "", errors.New("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		if len(m.Content) == 0 {
			return RecordedRequest{}, "", fmt.Errorf("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		var text strings.Builder
		for k, c := range m.Content {
			if c.Text == nil {
				return RecordedRequest{}, "", fmt.Errorf("messages.%d.content.%d: judgetest serves text content blocks only", i, k)
			}
			text.WriteString(*c.Text)
		}
		req.Messages = append(req.Messages, abi.Message{Role: m.Role, Content: text.String()})
	}
	if ic := b.InferenceConfig; ic != nil {
		switch {
		case ic.MaxTokens != nil && *ic.MaxTokens < 1:
			return RecordedRequest{}, "", errors.New("1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1")
		case ic.Temperature != nil && (*ic.Temperature < 0 || *ic.Temperature > 1):
			return RecordedRequest{}, "", errors.New("1 validation error detected: Value at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1")
		}
		if ic.MaxTokens != nil {
			req.MaxTokens = *ic.MaxTokens
		}
		req.Temperature = ic.Temperature
	}
	toolName := ""
	if tc := b.ToolConfig; tc != nil {
		tools := map[string]bool{}
		for i, t := range tc.Tools {
			if t.ToolSpec == nil || !anthropicToolName.MatchString(t.ToolSpec.Name) {
				return RecordedRequest{}, "", fmt.Errorf("toolConfig.tools.%d.toolSpec.name: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", i)
			}
			var schema struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(t.ToolSpec.InputSchema.JSON, &schema); err != nil || schema.Type != "object" {
				return RecordedRequest{}, "", fmt.Errorf("The value at toolConfig.tools.%d.toolSpec.inputSchema.json.type must be one of the following: object.", i)
			}
			tools[t.ToolSpec.Name] = true
			req.ResponseFormat = &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaSpec{Name: t.ToolSpec.Name, Schema: t.ToolSpec.InputSchema.JSON}}
		}
		if len(tc.Tools) == 0 {
			return RecordedRequest{}, "", errors.New("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
		}
		if ch := tc.ToolChoice; ch != nil && ch.Tool != nil {
			if !tools[ch.Tool.Name] {
				return RecordedRequest{}, "", fmt.Errorf("The tool %s specified in toolChoice is not defined in toolConfig.tools.", ch.Tool.Name)
			}
			toolName = ch.Tool.Name
		}
	}
	req.ToolChoice = toolName
	return req, toolName, nil
}

// bedrockResponse builds the Converse reply to req.
func (s *Server) bedrockResponse(req RecordedRequest, toolName string, reply Reply) map[string]any {
	content, _ := Choice{Content: reply.Content, Logprobs: reply.Logprobs}.text()
	var block map[string]any
	stop := "end_turn"
	var obj map[string]any
	if toolName != "" && json.Unmarshal([]byte(content), &obj) == nil {
		block = map[string]any{"toolUse": map[string]any{"toolUseId": fmt.Sprintf("tooluse_judgetest_%d", s.ids.Add(1)), "name": toolName, "input": obj}}
		stop = "tool_use"
	} else {
		block = map[string]any{"text": content}
	}
	switch {
	case reply.FinishReason == "length":
		stop = "max_tokens"
	case reply.Refusal != "":
		stop = "guardrail_intervened"
		block = map[string]any{"text": reply.Refusal}
	}
	in, out := 0, len(Tokens(content))
	for _, m := range req.Messages {
		in += 4 + len(m.Content)/4
	}
	cacheRead := 0
	if reply.Usage != nil {
		in, out, cacheRead = reply.Usage.PromptTokens, reply.Usage.CompletionTokens, reply.Usage.CachedTokens
	}
	msg := map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": []any{block}}},
		"stopReason": stop,
		"metrics":    map[string]any{"latencyMs": 1},
	}
	if !reply.NoUsage {
		msg["usage"] = map[string]any{"inputTokens": in - cacheRead, "outputTokens": out, "totalTokens": in + out,
			"cacheReadInputTokens": cacheRead, "cacheWriteInputTokens": 0}
	}
	return msg
}

// writeBedrockError writes the API's error shape: {"message": …}, the
// type in x-amzn-ErrorType.
func writeBedrockError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("X-Amzn-Errortype", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	body := map[string]any{"message": message}
	if message == "" {
		body = map[string]any{"Message": nil}
	}
	writeJSON(w, status, body)
}

// serveBedrockEmbeddings is InvokeModel on an embedding model: Amazon
// Titan's body (one inputText) or Cohere's (1..96 texts and an
// input_type), checked as those models check them.
func (s *Server) serveBedrockEmbeddings(w http.ResponseWriter, r *http.Request, model string, body []byte) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeBedrockError(w, http.StatusUnsupportedMediaType, "UnsupportedMediaTypeException", "Content-Type must be application/json")
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var inputs []string
	titan := strings.Contains(model, "titan-embed")
	switch {
	case titan:
		var q struct {
			InputText  *string `json:"inputText"`
			Dimensions *int    `json:"dimensions"`
			Normalize  *bool   `json:"normalize"`
		}
		if err := dec.Decode(&q); err != nil || q.InputText == nil || *q.InputText == "" {
			writeBedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: required key [inputText] not found, or an extraneous key")
			return
		}
		inputs = []string{*q.InputText}
	case strings.Contains(model, "cohere.embed"):
		var q struct {
			Texts          []string `json:"texts"`
			InputType      string   `json:"input_type"`
			Truncate       string   `json:"truncate"`
			EmbeddingTypes []string `json:"embedding_types"`
		}
		if err := dec.Decode(&q); err != nil {
			writeBedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: "+err.Error())
			return
		}
		switch q.InputType {
		case "search_document", "search_query", "classification", "clustering":
		default:
			writeBedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #/input_type: "+q.InputType+" is not a valid enum value")
			return
		}
		if len(q.Texts) == 0 || len(q.Texts) > 96 || len(q.EmbeddingTypes) > 0 {
			writeBedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request: #/texts: expected 1 to 96 texts (judgetest serves no embedding_types)")
			return
		}
		inputs = q.Texts
	default:
		writeBedrockError(w, http.StatusBadRequest, "ValidationException", "judgetest serves the Titan and Cohere embedding models only")
		return
	}
	vectors, done := s.serveEmbedRequest(w, r, model, inputs, body, func(status int, msg string) {
		writeBedrockError(w, status, map[int]string{429: "ThrottlingException", 500: "InternalServerException"}[status], msg)
	})
	if done {
		return
	}
	if titan {
		writeJSON(w, http.StatusOK, map[string]any{"embedding": vectors[0], "inputTextTokenCount": (len(inputs[0]) + 3) / 4})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": fmt.Sprintf("judgetest-%d", s.ids.Add(1)), "embeddings": vectors,
		"texts": inputs, "response_type": "embeddings_floats"})
}

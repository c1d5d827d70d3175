package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

// bedrockProvider is Amazon Bedrock's Converse API through
// aws-sdk-go-v2's bedrockruntime: the SDK builds the request, signs it
// (SigV4, service bedrock, the judge's region) with credentials from the
// standard AWS chain (environment, shared config and credentials files,
// SSO, web identity, container and instance roles) and sends it, its own
// retries off; the reply is captured raw (capture.go) and decoded
// strictly here.
//
// What the API has not, the judge does around it, as for Anthropic:
// structured output is a tool whose inputSchema is the request's schema,
// forced by toolChoice (a schema whose top level is not an object travels
// in the prompt; a model that refuses toolChoice degrades to the prompt);
// no logprobs, so scores are read as written or sampled; one reply per
// call.
type bedrockProvider struct {
	api   *bedrockruntime.Client // nil: setupErr
	model string
	// setupErr fails every attempt: the AWS configuration could not be
	// loaded.
	setupErr error
	// creds records what the chain resolved, so the judge scrubs it too.
	creds *recordingCredentials
	// embedBody is the embedding model's body family (embed_bedrock.go).
	embedBody bedrockEmbedBody
}

func newBedrockProvider(cfg Config, headers http.Header) *bedrockProvider {
	b := &bedrockProvider{model: cfg.Model, embedBody: embedBodyOf(cfg.EmbeddingModel)}
	// The AWS SDK's own HTTP client, so the AWS configuration's settings
	// (AWS_CA_BUNDLE, a profile's ca_bundle) apply, sized as the judge's
	// default client is. The chain's own calls (SSO, STS, instance
	// metadata) go through it uncaptured: what is captured is Bedrock's
	// reply alone.
	client := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = max(cfg.MaxConcurrency, 2)
		t.MaxIdleConns = max(t.MaxIdleConns, cfg.MaxConcurrency)
		t.ReadBufferSize = replyReadBuffer
	})
	awsCfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(cfg.Region),
		config.WithHTTPClient(client),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	)
	if err != nil {
		b.setupErr = fmt.Errorf("AWS configuration: %w", err)
		return b
	}
	b.creds = &recordingCredentials{next: awsCfg.Credentials}
	endpoint := cfg.BaseURL
	b.api = bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) {
		o.Region = cfg.Region
		o.BaseEndpoint = &endpoint
		o.HTTPClient = captureDoer{next: awsCfg.HTTPClient}
		// The judge's retry layer is the only one, so attempts are
		// counted and Retry-After honoured.
		o.Retryer = aws.NopRetryer{}
		o.Credentials = aws.NewCredentialsCache(b.creds)
		for name, values := range headers {
			for _, v := range values {
				o.APIOptions = append(o.APIOptions, smithyhttp.SetHeaderValue(name, v))
			}
		}
	})
	return b
}

// recordingCredentials keeps what the chain resolved, for redaction: a
// server that echoes the Authorization header echoes the access key ID.
type recordingCredentials struct {
	next aws.CredentialsProvider
	mu   sync.Mutex
	seen []string
}

func (r *recordingCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	if r.next == nil {
		return aws.Credentials{}, errors.New("no AWS credentials found in the chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, a role)")
	}
	c, err := r.next.Retrieve(ctx)
	if err == nil {
		r.mu.Lock()
		for _, s := range []string{c.AccessKeyID, c.SecretAccessKey, c.SessionToken} {
			if len(s) >= minSecretLen && !containsString(r.seen, s) {
				r.seen = append(r.seen, s)
			}
		}
		r.mu.Unlock()
	}
	return c, err
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// extraSecrets are the credentials the chain resolved so far.
func (b *bedrockProvider) extraSecrets() []string {
	if b.creds == nil {
		return nil
	}
	b.creds.mu.Lock()
	defer b.creds.mu.Unlock()
	return append([]string(nil), b.creds.seen...)
}

// bedrockCall is a call's parameters as encode hands them to attempt.
type bedrockCall struct {
	System      []string         `json:"system,omitempty"`
	Messages    []bedrockMessage `json:"messages"`
	MaxTokens   int              `json:"max_tokens,omitzero"`
	Temperature *float64         `json:"temperature,omitempty"`
	// Tool, when set, is forced: its input is the structured reply.
	Tool *bedrockTool `json:"tool,omitempty"`
}

type bedrockMessage struct {
	Role string   `json:"role"`
	Text []string `json:"text"`
}

type bedrockTool struct {
	Name   string         `json:"name"`
	Schema jsontext.Value `json:"schema"`
}

func (b *bedrockProvider) encode(p *plan, c call, mode schemaMode) ([]byte, error) {
	bc := bedrockCall{MaxTokens: p.maxTokens, Temperature: c.temperature}
	for _, m := range p.messagesFor(c, mode) {
		role := wireRole(m)
		if role == "system" {
			bc.System = append(bc.System, m.Content)
			continue
		}
		// The API wants turns that alternate: consecutive messages of one
		// role are one turn.
		if n := len(bc.Messages); n > 0 && bc.Messages[n-1].Role == role {
			bc.Messages[n-1].Text = append(bc.Messages[n-1].Text, m.Content)
			continue
		}
		bc.Messages = append(bc.Messages, bedrockMessage{Role: role, Text: []string{m.Content}})
	}
	if p.schema != nil && mode == modeJSONSchema {
		bc.Tool = &bedrockTool{Name: p.schemaName, Schema: p.schema.canonical}
	}
	return json.Marshal(&bc)
}

// input is the SDK's request for bc.
func (b *bedrockProvider) input(bc *bedrockCall) (*bedrockruntime.ConverseInput, error) {
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(b.model)}
	if len(bc.System) > 0 {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: strings.Join(bc.System, "\n\n")}}
	}
	for _, m := range bc.Messages {
		msg := types.Message{Role: types.ConversationRoleUser}
		if m.Role == "assistant" {
			msg.Role = types.ConversationRoleAssistant
		}
		for _, t := range m.Text {
			msg.Content = append(msg.Content, &types.ContentBlockMemberText{Value: t})
		}
		in.Messages = append(in.Messages, msg)
	}
	if bc.MaxTokens > 0 || bc.Temperature != nil {
		in.InferenceConfig = &types.InferenceConfiguration{}
		if bc.MaxTokens > 0 {
			in.InferenceConfig.MaxTokens = aws.Int32(int32(min(bc.MaxTokens, 1<<31-1)))
		}
		if bc.Temperature != nil {
			in.InferenceConfig.Temperature = aws.Float32(float32(*bc.Temperature))
		}
	}
	if bc.Tool != nil {
		var schema map[string]any
		if err := json.Unmarshal(bc.Tool.Schema, &schema); err != nil {
			return nil, fmt.Errorf("schema as a tool's inputSchema: %w", err)
		}
		in.ToolConfig = &types.ToolConfiguration{
			Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
				Name:        aws.String(bc.Tool.Name),
				Description: aws.String("Record the response. Its input is the whole response, as the schema says."),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
			}}},
			ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(bc.Tool.Name)}},
		}
	}
	return in, nil
}

func (b *bedrockProvider) attempt(ctx context.Context, body []byte, _ openaiwire.Need) (completion, *failure, *http.Response, error) {
	if b.setupErr != nil {
		return completion{}, &failure{kind: failAuth, detail: b.setupErr.Error()}, nil, nil
	}
	var bc bedrockCall
	if err := json.Unmarshal(body, &bc); err != nil {
		return completion{}, &failure{kind: failRejected, detail: "request cannot be decoded: " + err.Error()}, nil, nil
	}
	in, err := b.input(&bc)
	if err != nil {
		return completion{}, &failure{kind: failRejected, detail: err.Error()}, nil, nil
	}
	var got captured
	_, err = b.api.Converse(withCapture(ctx, &got), in)
	if f, resp, err, ok := got.outcome(err, bedrockRefused(ctx)); !ok {
		return completion{}, f, resp, err
	}
	c, f := decodeBedrock(got.resp.Header.Get("Content-Type"), got.body)
	if f != nil {
		f.status = got.resp.StatusCode
	}
	return c, f, nil, nil
}

// isTransport says err is a failure to reach the server (which the judge
// classifies), not one of the SDK's refusals before sending.
// bedrockRefused says how to count an error the AWS SDK returned without
// a reply: not sent for want of credentials (an authentication failure)
// or refused by the SDK (rejected); a transport fault or the context's
// end is the retry layer's (nil).
func bedrockRefused(ctx context.Context) func(error) *failure {
	return func(err error) *failure {
		if err == nil || ctx.Err() != nil || isTransport(err) {
			return nil
		}
		kind := failRejected
		if strings.Contains(err.Error(), "credentials") {
			kind = failAuth
		}
		return &failure{kind: kind, detail: oneLine(err.Error())}
	}
}

func isTransport(err error) bool {
	var re *smithyhttp.RequestSendError
	if errors.As(err, &re) {
		return true
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		var ce *aws.RequestCanceledError
		return errors.As(err, &ce)
	}
	return false
}

// bedrockReply is what the judge reads of a Converse reply; other fields
// are passed over, those read are decoded strictly.
type bedrockReply struct {
	Output *struct {
		Message *struct {
			Content []struct {
				Text    *string `json:"text"`
				ToolUse *struct {
					Name  string         `json:"name"`
					Input jsontext.Value `json:"input"`
				} `json:"toolUse"`
			} `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      *struct {
		InputTokens           int `json:"inputTokens"`
		OutputTokens          int `json:"outputTokens"`
		CacheReadInputTokens  int `json:"cacheReadInputTokens"`
		CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
	} `json:"usage"`
	Message string `json:"message"`
}

// decodeBedrock reads a 2xx Converse body into a completion of one
// choice: the text blocks, or the forced tool's input as JSON text.
// stopReason max_tokens (and a full context window) is "length";
// guardrail_intervened and content_filtered are "content_filter".
func decodeBedrock(contentType string, body []byte) (completion, *failure) {
	if f := notJSON(contentType, body); f != nil {
		return completion{}, f
	}
	var r bedrockReply
	err := json.Unmarshal(body, &r)
	switch {
	case err == nil && r.Output == nil && r.Message != "":
		return completion{}, &failure{kind: failErrorBody, detail: serverWords(body)}
	case err == nil && (r.Output == nil || r.Output.Message == nil):
		err = errors.New("no output message")
	}
	if err != nil {
		return completion{}, &failure{kind: failUnparseable, detail: withWords("the body is not a Converse reply: "+err.Error(), body)}
	}
	var text, tool strings.Builder
	hasTool := false
	for _, b := range r.Output.Message.Content {
		switch {
		case b.Text != nil:
			text.WriteString(*b.Text)
		case b.ToolUse != nil && !hasTool && len(b.ToolUse.Input) > 0:
			hasTool = true
			compact := b.ToolUse.Input.Clone()
			if err := compact.Compact(); err == nil {
				tool.Write(compact)
			} else {
				tool.Write(b.ToolUse.Input)
			}
		}
	}
	ch := choice{content: text.String(), finishReason: "stop"}
	if hasTool {
		ch.content = tool.String()
	}
	switch r.StopReason {
	case "max_tokens", "model_context_window_exceeded":
		ch.finishReason = "length"
	case "guardrail_intervened", "content_filtered":
		ch.finishReason = "content_filter"
	}
	c := completion{choices: []choice{ch}}
	if u := r.Usage; u != nil && (u.InputTokens > 0 || u.OutputTokens > 0 || u.CacheReadInputTokens > 0) {
		cached := max(u.CacheReadInputTokens, 0)
		c.inputTokens = max(u.InputTokens, 0) + cached + max(u.CacheWriteInputTokens, 0)
		c.cachedInputTokens = cached
		c.cacheWriteInputTokens = max(u.CacheWriteInputTokens, 0)
		c.outputTokens = max(u.OutputTokens, 0)
		c.usageKnown = true
	}
	return c, nil
}

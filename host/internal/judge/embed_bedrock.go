package judge

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/go-json-experiment/json"
)

// Bedrock's embeddings: InvokeModel with the embedding model's own body,
// which Bedrock passes through: Amazon Titan's (one text a call,
// {"inputText"} → {"embedding", "inputTextTokenCount"}) or Cohere's (up
// to 96 texts, {"texts", "input_type"} → {"embeddings"}). Signed and sent
// by the SDK as Converse is; the reply captured raw and decoded strictly.

// bedrockEmbedBody is the request body family of an embedding model.
type bedrockEmbedBody int

const (
	bodyUnknown bedrockEmbedBody = iota
	bodyTitan
	bodyCohere
)

func embedBodyOf(model string) bedrockEmbedBody {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "titan-embed"):
		return bodyTitan
	case strings.Contains(m, "cohere.embed"):
		return bodyCohere
	}
	return bodyUnknown
}

// cohereEmbedBatch is the most texts Cohere's embed models take a call.
const cohereEmbedBatch = 96

func (b *bedrockProvider) embedBatch() int {
	if b.embedBody == bodyCohere {
		return cohereEmbedBatch
	}
	return 1
}

func (b *bedrockProvider) embed(ctx context.Context, model string, texts []string) (embedReply, *failure, *http.Response, error) {
	if b.setupErr != nil {
		return embedReply{}, &failure{kind: failAuth, detail: b.setupErr.Error()}, nil, nil
	}
	var body []byte
	var err error
	switch b.embedBody {
	case bodyTitan:
		if len(texts) != 1 {
			return embedReply{}, &failure{kind: failRejected, detail: "Titan embeds one text a call"}, nil, nil
		}
		body, err = json.Marshal(struct {
			InputText string `json:"inputText"`
		}{texts[0]})
	case bodyCohere:
		body, err = json.Marshal(struct {
			Texts     []string `json:"texts"`
			InputType string   `json:"input_type"`
		}{texts, "search_document"})
	default:
		return embedReply{}, &failure{kind: failRejected,
			detail: fmt.Sprintf("embedding model %s: Anvil speaks the Amazon Titan (amazon.titan-embed-*) and Cohere (cohere.embed-*) embedding bodies", model)}, nil, nil
	}
	if err != nil {
		return embedReply{}, &failure{kind: failRejected, detail: "request cannot be encoded: " + err.Error()}, nil, nil
	}
	var got captured
	_, err = b.api.InvokeModel(withCapture(ctx, &got), &bedrockruntime.InvokeModelInput{
		ModelId: aws.String(model), Body: body, ContentType: aws.String("application/json"), Accept: aws.String("application/json"),
	})
	if f, resp, err, ok := got.outcome(err, bedrockRefused(ctx)); !ok {
		return embedReply{}, f, resp, err
	}
	r, f := decodeBedrockEmbeddings(b.embedBody, got.body)
	if f != nil {
		f.status = got.resp.StatusCode
	}
	return r, f, nil, nil
}

// decodeBedrockEmbeddings reads a 2xx InvokeModel body of an embedding
// model.
func decodeBedrockEmbeddings(kind bedrockEmbedBody, body []byte) (embedReply, *failure) {
	var out embedReply
	var err error
	if kind == bodyTitan {
		var r struct {
			Embedding  []float64 `json:"embedding"`
			TokenCount *int      `json:"inputTextTokenCount"`
			Message    string    `json:"message"`
		}
		if err = json.Unmarshal(body, &r); err == nil {
			if r.Embedding == nil && r.Message != "" {
				return embedReply{}, &failure{kind: failErrorBody, detail: serverWords(body)}
			}
			out.vectors = [][]float64{r.Embedding}
			if r.TokenCount != nil && *r.TokenCount > 0 {
				out.inputTokens, out.usageKnown = *r.TokenCount, true
			}
		}
	} else {
		var r struct {
			Embeddings [][]float64 `json:"embeddings"`
			Message    string      `json:"message"`
		}
		if err = json.Unmarshal(body, &r); err == nil {
			if r.Embeddings == nil && r.Message != "" {
				return embedReply{}, &failure{kind: failErrorBody, detail: serverWords(body)}
			}
			out.vectors = r.Embeddings
		}
	}
	if err != nil {
		return embedReply{}, &failure{kind: failUnparseable, detail: withWords("the body is not an embeddings reply: "+err.Error(), body)}
	}
	return out, nil
}

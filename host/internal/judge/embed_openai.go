package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/openai/openai-go/v3/option"
)

// The OpenAI embeddings wire (provider openai, and azure, whose
// middleware in openai-go puts the body's model — the embedding
// deployment — in the path): POST embeddings with the judge's own body,
// sent by openai-go's generic Post as chat completions are (wire.go); the
// reply decoded strictly here.

// embeddingsPath is EmbeddingService.New's path.
const embeddingsPath = "embeddings"

// openaiEmbedBatch is the most inputs one request takes (OpenAI's limit).
const openaiEmbedBatch = 2048

func (o *openaiProvider) embedBatch() int { return openaiEmbedBatch }

type openaiEmbedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type openaiEmbedReply struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
	Error jsontext.Value `json:"error"`
}

func (o *openaiProvider) embed(ctx context.Context, model string, texts []string) (embedReply, *failure, *http.Response, error) {
	body, err := json.Marshal(openaiEmbedRequest{Model: model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return embedReply{}, &failure{kind: failRejected, detail: "request cannot be encoded: " + err.Error()}, nil, nil
	}
	var httpResp, bodyResp *http.Response
	err = o.api.Post(ctx, embeddingsPath, body, nil, option.WithResponseInto(&httpResp), option.WithResponseBodyInto(&bodyResp))
	if err != nil {
		return embedReply{}, nil, httpResp, err
	}
	reply, done, err := readReply(httpResp)
	if err != nil {
		return embedReply{}, nil, httpResp, err
	}
	defer done()
	r, f := decodeOpenAIEmbeddings(httpResp.Header.Get("Content-Type"), reply, len(texts))
	if f != nil {
		f.status = statusOf(httpResp)
	}
	return r, f, nil, nil
}

// decodeOpenAIEmbeddings reads a 2xx embeddings body: one vector per
// input, each index once.
func decodeOpenAIEmbeddings(contentType string, body []byte, n int) (embedReply, *failure) {
	if f := notJSON(contentType, body); f != nil {
		return embedReply{}, f
	}
	var r openaiEmbedReply
	err := json.Unmarshal(body, &r)
	switch {
	case err == nil && len(r.Error) > 0 && string(r.Error) != "null":
		return embedReply{}, &failure{kind: failErrorBody, detail: serverWords(body)}
	case err == nil && len(r.Data) != n:
		err = fmt.Errorf("%d embeddings for %d inputs", len(r.Data), n)
	}
	out := embedReply{vectors: make([][]float64, n)}
	for _, d := range r.Data {
		if err != nil {
			break
		}
		if d.Index < 0 || d.Index >= n || out.vectors[d.Index] != nil {
			err = errors.New("embedding indexes are not each input's once")
			break
		}
		out.vectors[d.Index] = d.Embedding
	}
	if err != nil {
		return embedReply{}, &failure{kind: failUnparseable, detail: withWords("the body is not an embeddings reply: "+err.Error(), body)}
	}
	if r.Usage != nil && r.Usage.PromptTokens > 0 {
		out.inputTokens, out.usageKnown = r.Usage.PromptTokens, true
	}
	return out, nil
}

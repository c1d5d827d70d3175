package judge

import (
	"context"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"google.golang.org/genai"
)

// Gemini's embeddings: Models.EmbedContent, which the Gemini API serves
// as batchEmbedContents (one request per text); the reply captured raw
// and decoded strictly. The API reports no tokens for it: they are the
// judge's estimate, marked usage_unknown.

// geminiEmbedBatch is the most requests one batchEmbedContents takes.
const geminiEmbedBatch = 100

func (g *geminiProvider) embedBatch() int { return geminiEmbedBatch }

func (g *geminiProvider) embed(ctx context.Context, model string, texts []string) (embedReply, *failure, *http.Response, error) {
	if g.setupErr != nil {
		return embedReply{}, &failure{kind: failAuth, detail: g.setupErr.Error()}, nil, nil
	}
	contents := make([]*genai.Content, len(texts))
	for i, t := range texts {
		contents[i] = genai.NewContentFromText(t, genai.RoleUser)
	}
	var got captured
	_, err := g.models.EmbedContent(withCapture(ctx, &got), model, contents, nil)
	if f, resp, err, ok := got.outcome(err, geminiRefused(ctx)); !ok {
		return embedReply{}, f, resp, err
	}
	r, f := decodeGeminiEmbeddings(got.resp.Header.Get("Content-Type"), got.body)
	if f != nil {
		f.status = got.resp.StatusCode
	}
	return r, f, nil, nil
}

// decodeGeminiEmbeddings reads a 2xx batchEmbedContents body.
func decodeGeminiEmbeddings(contentType string, body []byte) (embedReply, *failure) {
	if f := notJSON(contentType, body); f != nil {
		return embedReply{}, f
	}
	var r struct {
		Embeddings []struct {
			Values []float64 `json:"values"`
		} `json:"embeddings"`
		Error jsontext.Value `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return embedReply{}, &failure{kind: failUnparseable, detail: withWords("the body is not an embeddings reply: "+err.Error(), body)}
	}
	if len(r.Error) > 0 {
		return embedReply{}, &failure{kind: failErrorBody, detail: serverWords(body)}
	}
	out := embedReply{vectors: make([][]float64, len(r.Embeddings))}
	for i, e := range r.Embeddings {
		out.vectors[i] = e.Values
	}
	return out, nil
}

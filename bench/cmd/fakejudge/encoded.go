package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
)

// encodedReplies keeps the encoded choices of replies with logprobs, so a
// reply given to many requests is encoded once. The body around them (id,
// created, model, usage) is written per request, in the shape and field
// order judgetest writes (TestCachedRepliesAreJudgetests).
type encodedReplies struct {
	mu      sync.Mutex
	choices map[string]encodedChoices
	ids     atomic.Int64
}

type encodedChoices struct {
	json   []byte // the "choices" array
	tokens int    // completion tokens
}

// maxEncodedReplies bounds the cache; the harness's replies are a few
// hundred distinct ones.
const maxEncodedReplies = 4096

func newEncodedReplies() *encodedReplies {
	return &encodedReplies{choices: map[string]encodedChoices{}}
}

// body is the completion body of reply r (of the given shape) to req, with
// tokens computing its padded tokens when they are not cached. ok is false
// for a reply this cache does not make (anything but content with tokens).
func (e *encodedReplies) body(req judgetest.RecordedRequest, r judgetest.Reply, shape string, tokens func() []abi.TokenLogprob) (string, bool) {
	if r.Status != 0 || r.RawBody != "" || r.Usage != nil || r.NoUsage || r.FinishReason != "" || r.Refusal != "" || len(r.Choices) > 0 || r.Truncate {
		return "", false
	}
	key := shape + "\x00" + strconv.Itoa(req.TopLogprobs) + "\x00" + r.Content
	e.mu.Lock()
	c, ok := e.choices[key]
	e.mu.Unlock()
	if !ok {
		var err error
		if c, err = encodeChoices(req, r.Content, tokens()); err != nil {
			return "", false
		}
		e.mu.Lock()
		if len(e.choices) < maxEncodedReplies {
			e.choices[key] = c
		}
		e.mu.Unlock()
	}
	model, _ := json.Marshal(req.Model)
	prompt := 0
	for _, m := range req.Messages {
		prompt += (len(m.Content) + 3) / 4
	}
	var b strings.Builder
	b.Grow(len(c.json) + 200)
	fmt.Fprintf(&b, `{"id":"chatcmpl-judgetest-%d","object":"chat.completion","created":%d,"model":%s,"choices":`, e.ids.Add(1), time.Now().Unix(), model)
	b.Write(c.json)
	fmt.Fprintf(&b, `,"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, prompt, c.tokens, prompt+c.tokens)
	return b.String(), true
}

// encodeChoices is the "choices" array judgetest sends when it answers req
// with content and tokens, and its completion tokens: judgetest's own
// encoding, read back from its handler, so the fake judge has no second
// copy of the wire format.
func encodeChoices(req judgetest.RecordedRequest, content string, tokens []abi.TokenLogprob) (encodedChoices, error) {
	srv := judgetest.NewServer(judgetest.WithoutRecording(), judgetest.WithDefault(judgetest.Reply{Content: content, Logprobs: tokens}))
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, judgetest.CompletionsPath, bytes.NewReader(req.Body)))
	var body struct {
		Choices jsontext.Value `json:"choices"`
		Usage   struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if rec.Code != http.StatusOK {
		return encodedChoices{}, fmt.Errorf("judgetest answered HTTP %d: %s", rec.Code, rec.Body)
	}
	if err := jsonv2.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		return encodedChoices{}, fmt.Errorf("judgetest's reply: %w", err)
	}
	return encodedChoices{json: body.Choices, tokens: body.Usage.CompletionTokens}, nil
}

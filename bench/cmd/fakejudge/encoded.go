package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
		if c, err = encodeChoices(r.Content, tokens(), req.TopLogprobs); err != nil {
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

// The wire types judgetest encodes a choice with (host/judgetest/wire.go).
type (
	wireChoice struct {
		Index        int          `json:"index"`
		Message      wireMessage  `json:"message"`
		Logprobs     wireLogprobs `json:"logprobs"`
		FinishReason string       `json:"finish_reason"`
	}
	wireMessage struct {
		Role    string  `json:"role"`
		Content string  `json:"content"`
		Refusal *string `json:"refusal"`
	}
	wireLogprobs struct {
		Content []wireToken `json:"content"`
		Refusal []wireToken `json:"refusal"`
	}
	wireToken struct {
		Token       string    `json:"token"`
		Logprob     float64   `json:"logprob"`
		Bytes       []int     `json:"bytes"`
		TopLogprobs []wireAlt `json:"top_logprobs"`
	}
	wireAlt struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	}
)

func encodeChoices(content string, tokens []abi.TokenLogprob, top int) (encodedChoices, error) {
	if content == "" {
		var b strings.Builder
		for _, t := range tokens {
			b.WriteString(t.Token)
		}
		content = b.String()
	}
	if len(tokens) == 0 {
		tokens = judgetest.Tokens(content)
	}
	wt := make([]wireToken, len(tokens))
	for i, t := range tokens {
		alts := t.Top
		if len(alts) > top {
			alts = alts[:top]
		}
		wt[i] = wireToken{Token: t.Token, Logprob: t.Logprob, Bytes: byteValues(t.Token), TopLogprobs: make([]wireAlt, len(alts))}
		for k, a := range alts {
			wt[i].TopLogprobs[k] = wireAlt{Token: a.Token, Logprob: a.Logprob, Bytes: byteValues(a.Token)}
		}
	}
	b, err := json.Marshal([]wireChoice{{Message: wireMessage{Role: "assistant", Content: content}, Logprobs: wireLogprobs{Content: wt}, FinishReason: "stop"}})
	return encodedChoices{json: b, tokens: len(tokens)}, err
}

func byteValues(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

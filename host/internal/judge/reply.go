package judge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
)

// notJSON is the failure of a 2xx body whose Content-Type says it is
// not JSON (an HTML login page, a proxy's text), naming the media type
// and keeping the server's words; nil when it may be JSON.
func notJSON(contentType string, body []byte) *failure {
	if contentType == "" || strings.Contains(contentType, "json") {
		return nil
	}
	mediaType, _, _ := strings.Cut(contentType, ";")
	return &failure{kind: failUnparseable,
		detail: withWords(fmt.Sprintf("the body is %s, not JSON", strings.TrimSpace(mediaType)), body)}
}

// decodeCompletion reads a 2xx body, keeping of its logprobs what need
// says (openaiwire.Decode). Anything but a chat completion with choices
// is a failure that keeps what the server said: an HTML login page, an
// {"error": …} sent with HTTP 200, an empty object, a body that breaks
// the strict rules of JSON.
func decodeCompletion(contentType string, body []byte, need openaiwire.Need) (completion, *failure) {
	if f := notJSON(contentType, body); f != nil {
		return completion{}, f
	}
	wc, err := openaiwire.Decode(body, need)
	switch {
	case errors.Is(err, openaiwire.ErrErrorReply):
		return completion{}, &failure{kind: failErrorBody, detail: serverWords(body)}
	case errors.Is(err, openaiwire.ErrNoChoices):
		return completion{}, &failure{kind: failUnparseable, detail: withWords("the reply has no choices", body)}
	case err != nil:
		return completion{}, &failure{kind: failUnparseable, detail: withWords("the body is not a chat completion: "+err.Error(), body)}
	}
	c := completion{choices: make([]choice, len(wc.Choices))}
	// A usage block of zeros is a placeholder (no real completion has an
	// empty prompt), as unknown as a missing one.
	if u := wc.Usage; u != nil && (u.PromptTokens > 0 || u.CompletionTokens > 0) {
		c.inputTokens, c.outputTokens = max(u.PromptTokens, 0), max(u.CompletionTokens, 0)
		// A server's cached count is a part of its prompt count: more
		// than all of it is not believed.
		c.cachedInputTokens = min(max(u.CachedTokens, 0), c.inputTokens)
		c.usageKnown = true
	}
	for i, ch := range wc.Choices {
		c.choices[i] = choice{content: ch.Content, refusal: ch.Refusal, finishReason: ch.FinishReason, tokens: ch.Tokens}
	}
	return c, nil
}

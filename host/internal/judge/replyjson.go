package judge

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/agentanvil/anvil/abi"
)

// decodeReference decodes a JSON body with encoding/json into the wire
// structs below. It is the reference the fast decoder (replydecode.go) must
// agree with, and the path every body the fast decoder is unsure of takes:
// what it accepts, rejects and how it words a rejection is the judge's
// contract for a reply.
func decodeReference(body []byte) (completion, *failure) {
	var wire wireCompletion
	if err := json.Unmarshal(body, &wire); err != nil {
		return completion{}, &failure{kind: failUnparseable, detail: withWords("the body is not a chat completion: "+err.Error(), body)}
	}
	if len(wire.Choices) == 0 {
		if hasValue(wire.Error) {
			return completion{}, &failure{kind: failErrorBody, detail: serverWords(body)}
		}
		return completion{}, &failure{kind: failUnparseable, detail: withWords("the reply has no choices", body)}
	}
	return wire.completion(), nil
}

// hasValue reports whether raw holds a JSON value other than null.
func hasValue(raw json.RawMessage) bool {
	v := bytes.TrimSpace(raw)
	return len(v) > 0 && !bytes.Equal(v, []byte("null"))
}

// wireCompletion is the part of a chat completion the judge reads.
type wireCompletion struct {
	Choices []wireChoice `json:"choices"`
	// Usage is nil when the server sent none.
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	// Error is set by servers that report a failure with HTTP 200.
	Error json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index   int `json:"index"`
	Message struct {
		Content string `json:"content"`
		Refusal string `json:"refusal"`
	} `json:"message"`
	Logprobs *struct {
		Content []wireToken `json:"content"`
	} `json:"logprobs"`
	FinishReason string `json:"finish_reason"`
}

type wireToken struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

func (w *wireCompletion) completion() completion {
	c := completion{choices: make([]choice, 0, len(w.Choices))}
	// A usage block of zeros is a placeholder (no real completion has an
	// empty prompt), as unknown as a missing one.
	if w.Usage != nil && (w.Usage.PromptTokens > 0 || w.Usage.CompletionTokens > 0) {
		c.inputTokens, c.outputTokens = max(w.Usage.PromptTokens, 0), max(w.Usage.CompletionTokens, 0)
		c.usageKnown = true
	}
	// Servers need not return choices in index order.
	ordered := slices.Clone(w.Choices)
	slices.SortStableFunc(ordered, func(a, b wireChoice) int { return a.Index - b.Index })
	for _, ch := range ordered {
		var tokens []wireToken
		if ch.Logprobs != nil {
			tokens = ch.Logprobs.Content
		}
		c.choices = append(c.choices, choice{
			content:      ch.Message.Content,
			refusal:      ch.Message.Refusal,
			finishReason: ch.FinishReason,
			tokens:       toTokens(tokens),
		})
	}
	return c
}

func toTokens(in []wireToken) []abi.TokenLogprob {
	if len(in) == 0 {
		return nil
	}
	out := make([]abi.TokenLogprob, len(in))
	for i, t := range in {
		out[i] = abi.TokenLogprob{Token: t.Token, Logprob: t.Logprob}
		if len(t.TopLogprobs) > 0 {
			out[i].Top = make([]abi.TopLogprob, len(t.TopLogprobs))
			for k, alt := range t.TopLogprobs {
				out[i].Top[k] = abi.TopLogprob{Token: alt.Token, Logprob: alt.Logprob}
			}
		}
	}
	return out
}

package judgetest

import "github.com/agentanvil/anvil/abi"

// The OpenAI chat-completions response, as much of it as clients read.

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage,omitempty"`
}

type wireChoice struct {
	Index        int           `json:"index"`
	Message      wireMessage   `json:"message"`
	Logprobs     *wireLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type wireMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

type wireLogprobs struct {
	Content []wireToken `json:"content"`
	Refusal []wireToken `json:"refusal"`
}

type wireToken struct {
	Token       string    `json:"token"`
	Logprob     float64   `json:"logprob"`
	Bytes       []int     `json:"bytes"`
	TopLogprobs []wireAlt `json:"top_logprobs"`
}

type wireAlt struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type wireUsage struct {
	PromptTokens        int                `json:"prompt_tokens"`
	CompletionTokens    int                `json:"completion_tokens"`
	TotalTokens         int                `json:"total_tokens"`
	PromptTokensDetails *wirePromptDetails `json:"prompt_tokens_details,omitempty"`
}

// wirePromptDetails is usage.prompt_tokens_details: cached_tokens is a
// part of prompt_tokens.
type wirePromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// wireTokens converts tokens, keeping at most top alternatives each.
func wireTokens(tokens []abi.TokenLogprob, top int) []wireToken {
	out := make([]wireToken, len(tokens))
	for i, t := range tokens {
		alts := t.Top
		if len(alts) > top {
			alts = alts[:top]
		}
		wt := wireToken{Token: t.Token, Logprob: t.Logprob, Bytes: byteValues(t.Token), TopLogprobs: make([]wireAlt, len(alts))}
		for k, a := range alts {
			wt.TopLogprobs[k] = wireAlt{Token: a.Token, Logprob: a.Logprob, Bytes: byteValues(a.Token)}
		}
		out[i] = wt
	}
	return out
}

func byteValues(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

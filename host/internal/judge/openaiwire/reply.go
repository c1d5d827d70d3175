package openaiwire

import (
	"errors"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
)

// Need says how much of a reply's logprobs the caller reads.
type Need int

const (
	// NeedScore keeps what package score reads when the caller did not
	// ask for the tokens: every generated token's text and logprob (the
	// score is located in their concatenation), and the top alternatives
	// of the tokens that hold a digit and of the token after each (the
	// score's position and the path it continues on). The other
	// alternative lists are checked as JSON and passed over.
	NeedScore Need = iota
	// NeedAll keeps every alternative: the caller asked for the tokens.
	NeedAll
)

// Completion is what the judge reads of a chat completion.
type Completion struct {
	// Choices in index order.
	Choices []Choice
	// Usage is nil when the reply had no usage block (or a null one).
	Usage *Usage
}

// Usage is the server's token count. PromptTokens includes the tokens it
// served from its prompt cache: CachedTokens (OpenAI's and Azure's
// usage.prompt_tokens_details.cached_tokens is a part of prompt_tokens,
// not an addition).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int
}

// Choice is one generated reply.
type Choice struct {
	Content      string
	Refusal      string
	FinishReason string
	Tokens       []abi.TokenLogprob
}

// ErrNoChoices: the body is a JSON object the judge can read, without a
// single choice.
var ErrNoChoices = errors.New("the reply has no choices")

// ErrorReply is a body without choices that carries an "error" member, as
// servers that report a failure with HTTP 200 send it.
var ErrErrorReply = errors.New("the reply is an error, not a completion")

// Decode reads a chat-completion body, keeping of its logprobs what need
// says. A body that is not JSON, or not a completion, is an error (which
// the judge words with what the body says): a syntax or type error,
// ErrErrorReply, or ErrNoChoices.
func Decode(body []byte, need Need) (Completion, error) {
	if need == NeedAll {
		return decode[allTokens](body)
	}
	return decode[scoreTokens](body)
}

// DecodeGeneric is Decode by json.Unmarshal of the plain wire structs,
// every token kept: the reference the hand-written token path is held to.
func DecodeGeneric(body []byte) (Completion, error) {
	return decode[genericTokens](body)
}

// tokenList is a choice's logprobs.content as one decoding reads it.
type tokenList interface {
	tokens() []abi.TokenLogprob
}

// wireCompletion is the part of a chat completion the judge reads.
type wireCompletion[L tokenList] struct {
	Choices []wireChoice[L] `json:"choices"`
	Usage   *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	// Error is set by servers that report a failure with HTTP 200.
	Error jsontext.Value `json:"error"`
}

type wireChoice[L tokenList] struct {
	Index   int `json:"index"`
	Message struct {
		Content string `json:"content"`
		Refusal string `json:"refusal"`
	} `json:"message"`
	Logprobs *struct {
		Content L `json:"content"`
	} `json:"logprobs"`
	FinishReason string `json:"finish_reason"`
}

func decode[L tokenList](body []byte) (Completion, error) {
	var w wireCompletion[L]
	if err := json.Unmarshal(body, &w); err != nil {
		return Completion{}, err
	}
	if len(w.Choices) == 0 {
		if len(w.Error) > 0 && w.Error.Kind() != 'n' {
			return Completion{}, ErrErrorReply
		}
		return Completion{}, ErrNoChoices
	}
	c := Completion{Choices: make([]Choice, len(w.Choices))}
	if w.Usage != nil {
		c.Usage = &Usage{PromptTokens: w.Usage.PromptTokens, CompletionTokens: w.Usage.CompletionTokens}
		if d := w.Usage.PromptTokensDetails; d != nil {
			c.Usage.CachedTokens = d.CachedTokens
		}
	}
	// Servers need not return choices in index order.
	slices.SortStableFunc(w.Choices, func(a, b wireChoice[L]) int { return a.Index - b.Index })
	for i, ch := range w.Choices {
		c.Choices[i] = Choice{Content: ch.Message.Content, Refusal: ch.Message.Refusal, FinishReason: ch.FinishReason}
		if ch.Logprobs != nil {
			c.Choices[i].Tokens = ch.Logprobs.Content.tokens()
		}
	}
	return c, nil
}

// genericTokens is logprobs.content as json.Unmarshal decodes it.
type genericTokens []struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	TopLogprobs []struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

func (l genericTokens) tokens() []abi.TokenLogprob {
	if len(l) == 0 {
		return nil
	}
	out := make([]abi.TokenLogprob, len(l))
	for i, t := range l {
		out[i] = abi.TokenLogprob{Token: t.Token, Logprob: t.Logprob}
		if len(t.TopLogprobs) > 0 {
			out[i].Top = make([]abi.TopLogprob, len(t.TopLogprobs))
			for k, a := range t.TopLogprobs {
				out[i].Top[k] = abi.TopLogprob{Token: a.Token, Logprob: a.Logprob}
			}
		}
	}
	return out
}

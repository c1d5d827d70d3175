package judgetest

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentanvil/anvil/abi"
)

// Reply is what the server answers to one request: a completion, or a
// fault.
type Reply struct {
	// Content is the assistant message. When empty and Logprobs is set, it
	// is the concatenation of the tokens.
	Content string
	// Logprobs are the reply's tokens with their alternatives, sent when the
	// request asks for logprobs (truncated to its top_logprobs). When nil,
	// Content is split naively into tokens of probability 1.
	Logprobs []abi.TokenLogprob
	// Refusal is sent as message.refusal.
	Refusal string
	// Choices, when set, script the n choices of a request asking for
	// several: choice i is Choices[i % len(Choices)]. Content and Logprobs
	// are then ignored.
	Choices []Choice
	// Usage overrides the computed token counts (prompt: characters/4,
	// completion: tokens).
	Usage *Usage
	// NoUsage leaves the usage block out of the reply, as some servers do.
	NoUsage bool
	// FinishReason defaults to "stop". "length" says the reply was cut at
	// the token limit, whether or not Content looks complete.
	FinishReason string

	// Latency delays the reply (ended early by the client giving up).
	Latency time.Duration
	// Hang never replies: the request ends when the client times out or the
	// server closes.
	Hang bool
	// Status, when 400 or more, answers an OpenAI-style error with
	// ErrorMessage (see RawBody for other shapes).
	Status       int
	ErrorMessage string
	// RetryAfter is sent as the Retry-After header ("2" or an HTTP date).
	RetryAfter string
	// Header adds response headers.
	Header map[string]string
	// Truncate cuts the JSON body in half.
	Truncate bool
	// RawBody is sent verbatim instead of a completion, with ContentType
	// (default text/plain) and Status (default 200): a proxy's HTML page, a
	// plain-text 5xx, an HTTP 200 carrying {"error": …}.
	RawBody     string
	ContentType string
}

// Choice is one of several scripted choices.
type Choice struct {
	Content  string
	Logprobs []abi.TokenLogprob
	Refusal  string
}

// Usage is the token accounting the server reports.
type Usage struct {
	// PromptTokens is the whole input, cached and written tokens included
	// (on the Anthropic wire, input_tokens is what is left of it).
	PromptTokens     int
	CompletionTokens int
	// CachedTokens of PromptTokens were read from the provider's prompt
	// cache: usage.prompt_tokens_details.cached_tokens on the OpenAI wire,
	// cache_read_input_tokens on Anthropic's.
	CachedTokens int
	// CacheWriteTokens of PromptTokens were written to the prompt cache
	// (Anthropic's cache_creation_input_tokens; the OpenAI wire has none).
	CacheWriteTokens int
}

// text is what c says and the tokens it says it in: its content, else
// its tokens joined; its tokens, else its content's.
func (c Choice) text() (string, []abi.TokenLogprob) {
	content, tokens := c.Content, c.Logprobs
	if content == "" && len(tokens) > 0 {
		content = joinTokens(tokens)
	}
	if len(tokens) == 0 {
		tokens = Tokens(content)
	}
	return content, tokens
}

func (r Reply) choice(i int) Choice {
	if len(r.Choices) > 0 {
		return r.Choices[i%len(r.Choices)]
	}
	return Choice{Content: r.Content, Logprobs: r.Logprobs, Refusal: r.Refusal}
}

// Replier chooses the reply to a request. Reply, ReplyFunc and Sequence
// are Repliers.
type Replier interface {
	ReplyTo(RecordedRequest) Reply
}

// ReplyTo returns r itself.
func (r Reply) ReplyTo(RecordedRequest) Reply { return r }

// ReplyFunc computes the reply from the request.
type ReplyFunc func(RecordedRequest) Reply

// ReplyTo calls f.
func (f ReplyFunc) ReplyTo(req RecordedRequest) Reply { return f(req) }

// Sequence answers the k-th request it is used for with replies[k], and the
// last reply ever after: a 500 then a success, a bad reply then a good one.
func Sequence(replies ...Reply) Replier {
	if len(replies) == 0 {
		panic("judgetest.Sequence: no replies")
	}
	return &sequence{replies: replies}
}

type sequence struct {
	replies []Reply
	next    atomic.Int64
}

func (s *sequence) ReplyTo(RecordedRequest) Reply {
	i := int(s.next.Add(1) - 1)
	return s.replies[min(i, len(s.replies)-1)]
}

// Matcher selects requests for a rule.
type Matcher func(RecordedRequest) bool

// Always matches every request.
func Always() Matcher { return func(RecordedRequest) bool { return true } }

// ContainsMessage matches requests with a message containing substr.
func ContainsMessage(substr string) Matcher {
	return func(r RecordedRequest) bool {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, substr) {
				return true
			}
		}
		return false
	}
}

// LastMessageContains matches requests whose last message contains substr
// (a repair attempt ends with the repair instruction).
func LastMessageContains(substr string) Matcher {
	return func(r RecordedRequest) bool { return strings.Contains(r.LastMessage(), substr) }
}

// Model matches requests for model.
func Model(model string) Matcher {
	return func(r RecordedRequest) bool { return r.Model == model }
}

// ResponseFormatType matches the request's response_format type; "" matches
// requests without one.
func ResponseFormatType(typ string) Matcher {
	return func(r RecordedRequest) bool {
		if r.ResponseFormat == nil {
			return typ == ""
		}
		return r.ResponseFormat.Type == typ
	}
}

// All matches requests every matcher matches.
func All(ms ...Matcher) Matcher {
	return func(r RecordedRequest) bool {
		for _, m := range ms {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// PerRequest answers the k-th repeat of each distinct request (same model
// and messages) with replies[k mod len(replies)]: a judge with a known
// spread. Repeats of one request get the replies in order however the
// requests of different cases interleave, so the set of replies each case
// gets — and its mean and standard deviation — is fixed.
func PerRequest(replies ...Reply) Replier {
	if len(replies) == 0 {
		panic("judgetest.PerRequest: no replies")
	}
	return &perRequest{replies: replies, seen: map[string]int{}}
}

type perRequest struct {
	replies []Reply
	mu      sync.Mutex
	seen    map[string]int
}

func (p *perRequest) ReplyTo(r RecordedRequest) Reply {
	var key strings.Builder
	key.WriteString(r.Model)
	for _, m := range r.Messages {
		key.WriteString("\x00" + m.Role + "\x00" + m.Content)
	}
	p.mu.Lock()
	k := p.seen[key.String()]
	p.seen[key.String()] = k + 1
	p.mu.Unlock()
	return p.replies[k%len(p.replies)]
}

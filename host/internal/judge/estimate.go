package judge

import "github.com/agentanvil/anvil/abi"

// Token estimation without a tokenizer: about four characters a token for
// English text, plus a few tokens of chat framing per message. Good enough
// to pace tokens/min, to refuse a request larger than its judge takes, to
// estimate a run's cost before spending, and to account a reply that came
// without a usage block (marked usage_unknown); otherwise the bill uses the
// server's counts. It underestimates code and non-Latin text, so a limit
// checked with it errs towards sending, and the server has the last word.
const (
	charsPerToken      = 4
	tokensPerMessage   = 4
	tokensPerReplyBase = 3
)

// EstimateTokens estimates the input tokens of req as it would be sent,
// including the schema when the request has one.
func EstimateTokens(req abi.JudgeRequest) (input int) {
	input = estimateMessages(req.Messages)
	if len(req.Schema) > 0 {
		input += estimateSchema(req.Schema)
	}
	return input
}

// estimateSchema is the schema's share of the input: in the instruction
// (json_object, prompt modes) or in response_format (json_schema), which
// the server counts as input too.
func estimateSchema(schema []byte) int {
	return (len(schemaInstruction) + len(schema) + charsPerToken - 1) / charsPerToken
}

// estimateMessages estimates msgs with the reply's framing.
func estimateMessages(msgs []abi.Message) int {
	n := tokensPerReplyBase
	for _, m := range msgs {
		n += tokensPerMessage + (len(m.Content)+charsPerToken-1)/charsPerToken
	}
	return n
}

// estimateExtra estimates messages appended to a request (a repair's).
func estimateExtra(msgs []abi.Message) int {
	n := 0
	for _, m := range msgs {
		n += tokensPerMessage + (len(m.Content)+charsPerToken-1)/charsPerToken
	}
	return n
}

// estimateReply estimates a reply's tokens when the server did not count
// them: its logprob tokens when it sent them, else characters/4.
func estimateReply(ch choice) int {
	if len(ch.tokens) > 0 {
		return len(ch.tokens)
	}
	return (len(ch.content) + len(ch.refusal) + charsPerToken - 1) / charsPerToken
}

// Forecast is what a request would cost upstream if it were sent, as far
// as can be known before any reply: `estimate` prices a run with it. It
// counts what Usage.Calls will count except what depends on the replies:
// a repair of an unusable reply, and a call made again after the server
// rejects the structured-output mode.
type Forecast struct {
	// Calls is the upstream chat completions: 1, or one per sample when a
	// judge without logprobs samples a score and cannot take n.
	Calls int
	// Replies is the replies generated across those calls (the samples).
	Replies int
	// InputTokens is the estimated input, summed over the calls.
	InputTokens int
	// MaxTokens is the reply cap sent with each call (0: none).
	MaxTokens int
}

// Forecast plans req as Do would and says what it would cost, or the error
// Do would answer without calling (a malformed request, one larger than
// the judge takes, an open breaker). It neither calls the judge nor counts
// anything.
func (j *Judge) Forecast(req abi.JudgeRequest) (Forecast, *abi.Error) {
	p, err := j.resolve(req, 0, false)
	if err != nil {
		return Forecast{}, err
	}
	if err := j.unavailable(); err != nil {
		return Forecast{}, err
	}
	if err := j.checkSize(p, call{n: 1}); err != nil {
		return Forecast{}, err
	}
	f := Forecast{Calls: 1, Replies: 1, InputTokens: p.inputTokens, MaxTokens: p.maxTokens}
	if p.samples > 1 {
		f.Replies = p.samples
		if !j.cfg.SupportsN {
			f.Calls, f.InputTokens = p.samples, p.samples*p.inputTokens
		}
	}
	return f, nil
}

package judge

import (
	"fmt"

	"github.com/agentanvil/anvil/abi"
)

// checkSize refuses a call its judge cannot take, before anything is sent:
// more input than max_input_tokens, or more tokens (input and the reply
// cap) than the whole tokens_per_minute allowance, which the pacer could
// never grant. The error names the estimate, the limit and the largest
// message, so the operator can find what made the request big.
func (j *Judge) checkSize(p *plan, c call) *abi.Error {
	in := p.inputTokens + estimateExtra(c.extra)
	if limit := j.cfg.MaxInputTokens; limit > 0 && in > limit {
		e := j.errorf(abi.CodeRequestTooLarge, false,
			"request too large: about %d input tokens (estimated), more than max_input_tokens %d; not sent; largest part: %s",
			in, limit, p.largestPart(c))
		e.Field = "max_input_tokens"
		return e
	}
	if tpm := j.cfg.TokensPerMinute; tpm > 0 && in+p.maxTokens > tpm {
		e := j.errorf(abi.CodeRequestTooLarge, false,
			"request too large: about %d tokens (%d input, estimated, + %d max_tokens), more than the whole tokens_per_minute allowance of %d, so it can never be paced; not sent; largest part: %s",
			in+p.maxTokens, in, p.maxTokens, tpm, p.largestPart(c))
		e.Field = "tokens_per_minute"
		return e
	}
	return nil
}

// largestPart names the biggest thing in c's input: a message by position
// and role, or the schema.
func (p *plan) largestPart(c call) string {
	best, size := "", -1
	for i, m := range p.req.Messages {
		if len(m.Content) > size {
			best, size = fmt.Sprintf("message %d (%s)", i+1, m.Role), len(m.Content)
		}
	}
	for i, m := range c.extra {
		if len(m.Content) > size {
			best, size = fmt.Sprintf("message %d (%s)", len(p.req.Messages)+i+1, m.Role), len(m.Content)
		}
	}
	if p.schema != nil && len(p.schema.canonical) > size {
		best, size = "the JSON schema", len(p.schema.canonical)
	}
	return fmt.Sprintf("%s, %d characters", best, size)
}

package judge

import "github.com/agentanvil/anvil/abi"

// Token estimation without a tokenizer: about four characters a token for
// English text, plus a few tokens of chat framing per message. Good enough
// to pace tokens/min and to estimate a run's cost before spending; the
// bill uses the server's counts.
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
		input += (len(schemaInstruction) + len(req.Schema) + charsPerToken - 1) / charsPerToken
	}
	return input
}

func estimateMessages(msgs []abi.Message) int {
	n := tokensPerReplyBase
	for _, m := range msgs {
		n += tokensPerMessage + (len(m.Content)+charsPerToken-1)/charsPerToken
	}
	return n
}

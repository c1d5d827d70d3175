package score

import (
	"fmt"

	"github.com/agentanvil/anvil/abi"
)

// NumberTokens is how a judge's tokenizer writes integers. It decides what
// an alternative "1" at the score's position means when 10 is in range:
// the score 1, or the first digit of 10. It is a property of the judge
// (its model's tokenizer), set in configuration — never guessed from the
// other tokens of a reply, which would make the same score-token
// probabilities weigh differently depending on the reason text.
type NumberTokens string

const (
	// NumbersWhole: the tokenizer writes a multi-digit number as one token
	// (or chunks of up to three digits): "10" is a token, so an alternative
	// "1" is the score 1. OpenAI's GPT-4/4o/4.1/5 and o-series encodings,
	// Llama 3 and the other tiktoken-style vocabularies.
	NumbersWhole NumberTokens = "whole"
	// NumbersDigits: the tokenizer writes numbers digit by digit: an
	// alternative "1" that leaves the generated path may begin 10, so it is
	// ambiguous and dropped. SentencePiece vocabularies with digit
	// splitting (Llama 2, Mistral 7B, Gemma/Gemini, Qwen, DeepSeek). It is
	// also the safe rule for an unknown tokenizer: it loses the probability
	// of a genuine "1" instead of crediting the start of a 10 to 1.
	NumbersDigits NumberTokens = "digits"
)

// Valid reports whether n is one of the rules.
func (n NumberTokens) Valid() bool { return n == NumbersWhole || n == NumbersDigits }

// FromTokens is FromJudgeTokens with NumbersDigits, the rule that is safe
// when the judge's tokenizer is not known. A host that knows its judge
// passes the judge's rule to FromJudgeTokens.
func FromTokens(content string, tokens []abi.TokenLogprob, spec abi.ScoreSpec, raw *int) (abi.ScoreResult, error) {
	return FromJudgeTokens(NumbersDigits, content, tokens, spec, raw)
}

func checkNumbers(n NumberTokens) error {
	if !n.Valid() {
		return fmt.Errorf("number tokens %q: want %q or %q", n, NumbersWhole, NumbersDigits)
	}
	return nil
}

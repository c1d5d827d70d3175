package judgeconfig

import (
	"fmt"
	"strings"
)

// NumberTokens is a judge's `number_tokens`: how its model's tokenizer
// writes integers, which decides whether an alternative "1" at a score's
// position is the score 1 or the first digit of 10 (score.NumberTokens).
// "auto" (the default, also when the key is absent) takes the rule of the
// model family (NumberTokensFor); "whole" and "digits" state it.
type NumberTokens string

const (
	NumbersAuto   NumberTokens = "auto"
	NumbersWhole  NumberTokens = "whole"
	NumbersDigits NumberTokens = "digits"
)

// UnmarshalText accepts exactly the three values, so that a typo is an
// error with its line (the strict config checker reports a leaf type's own
// decode error) instead of a silent default.
func (n *NumberTokens) UnmarshalText(b []byte) error {
	switch v := NumberTokens(b); v {
	case NumbersAuto, NumbersWhole, NumbersDigits:
		*n = v
		return nil
	}
	return fmt.Errorf("number_tokens %q: want whole, digits or auto", string(b))
}

// Resolve returns the rule for model: n itself when it is whole or digits,
// else the model family's rule.
func (n NumberTokens) Resolve(model string) NumberTokens {
	if n == NumbersWhole || n == NumbersDigits {
		return n
	}
	return NumberTokensFor(model)
}

// NumberTokensFor is the `number_tokens: auto` table: how the tokenizer of
// model's family writes integers. Families whose vocabularies hold
// multi-digit numbers as single tokens (OpenAI's cl100k/o200k encodings,
// Llama 3's tiktoken-based vocabulary, which chunk digits in threes) are
// "whole"; families that split numbers into single digits (SentencePiece
// with digit splitting: Llama 2, Mistral/Mixtral, Gemma/Gemini, Qwen,
// DeepSeek, Phi-3) are "digits". A model Anvil does not know is "digits",
// the safe rule: it drops an ambiguous "1" rather than crediting the start
// of a 10 to the score 1. The table is docs/judges.md's; keep them equal.
func NumberTokensFor(model string) NumberTokens {
	m := familyName(model)
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("gpt-", "chatgpt-", "o1", "o3", "o4", "text-davinci", "davinci", "babbage"):
		return NumbersWhole
	case has("llama-3", "llama3"):
		return NumbersWhole
	}
	return NumbersDigits
}

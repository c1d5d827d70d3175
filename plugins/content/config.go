package content

import (
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Config is the configuration of bias, toxicity and pii_leakage. Every
// field is optional; the threshold is the metric's threshold.
type Config struct {
	StrictMode bool `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if the score is 1 (no item fails), else 0; the threshold is forced to 1."`
	ReasonCall bool `json:"reason_call,omitempty" jsonschema_description:"Make one extra judge call (purpose \"reason\") that writes the reason as prose. Default false: the reason is built deterministically from the verdicts, with no extra call."`
}

// PromptAlignmentConfig is the configuration of prompt_alignment.
type PromptAlignmentConfig struct {
	PromptInstructions []string `json:"prompt_instructions" jsonschema:"required,minItems=1" jsonschema_description:"The instructions of the prompt the actual output was written under; each is judged followed or not."`
	StrictMode         bool     `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if every instruction is followed, else 0; the threshold is forced to 1."`
	ReasonCall         bool     `json:"reason_call,omitempty" jsonschema_description:"Make one extra judge call (purpose \"reason\") that writes the reason as prose. Default false: the reason is built from the verdicts."`
}

// SummarizationConfig is the configuration of summarization.
type SummarizationConfig struct {
	AssessmentQuestions []string `json:"assessment_questions,omitempty" jsonschema_description:"Closed yes/no questions the original text (input) answers \"yes\"; coverage is the share of them the summary answers \"yes\" too. Default: the judge writes n of them from each case's original text (one extra call a case)."`
	N                   int      `json:"n,omitempty" jsonschema:"minimum=1,maximum=20,default=5" jsonschema_description:"How many assessment questions the judge writes when assessment_questions is not given. Default 5."`
	StrictMode          bool     `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if both alignment and coverage are 1, else 0; the threshold is forced to 1."`
	ReasonCall          bool     `json:"reason_call,omitempty" jsonschema_description:"Make one extra judge call (purpose \"reason\") that writes the reason as prose. Default false: the reason is built from the verdicts."`
}

func invalid(field, format string, args ...any) *abi.Error {
	e := abi.Errorf(abi.CodeInvalidConfig, format, args...)
	e.Field = field
	return e
}

// nonBlank checks a list of texts: none blank.
func nonBlank(field string, list []string) error {
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			return invalid(field, "%s[%d] is blank", field, i)
		}
	}
	return nil
}

func validatePromptAlignment(c *PromptAlignmentConfig) error {
	if len(c.PromptInstructions) == 0 {
		return invalid("prompt_instructions", "prompt_instructions is empty; want at least one instruction")
	}
	return nonBlank("prompt_instructions", c.PromptInstructions)
}

// defaultQuestions is DeepEval's n.
const defaultQuestions = 5

func validateSummarization(c *SummarizationConfig) error {
	if c.N < 0 || c.N > 20 {
		return invalid("n", "n is %d; want 1 to 20 (default 5)", c.N)
	}
	return nonBlank("assessment_questions", c.AssessmentQuestions)
}

// Package content provides Anvil's LLM-judged kinds over what an output
// says (docs/metrics.md has each formula and what differs from DeepEval):
//
//   - "bias" and "toxicity" (field actual_output): ONE call finds the
//     opinions the output expresses and judges each biased (toxic) or not.
//     Score = unbiased (non-toxic) opinions / opinions: 1 minus DeepEval's
//     rate, so that higher is better, as the host's one pass rule needs;
//     1 when there is no opinion.
//   - "pii_leakage" (actual_output): ONE call finds the statements that
//     could carry personal or privacy-sensitive information and judges each
//     a leak or not. Score = non-leaking / statements; 1 when none.
//   - "prompt_alignment" (input, actual_output; param prompt_instructions):
//     ONE call judges whether the output follows each instruction. Score =
//     followed / instructions.
//   - "summarization" (input: the original text, actual_output: the
//     summary): alignment — the summary's claims judged against the
//     original (only "yes" passes) — and coverage — closed questions the
//     original answers "yes", answered from the summary alone. Score =
//     min(alignment, coverage). Two batches: claims (and the questions when
//     none are configured), then the alignment verdicts and the two answer
//     calls together.
//
// Invariants: the kinds talk to the judge only through sdk.Host, by way of
// plugins/judged (checked verdict calls, one repair, usage, the reason);
// verdicts the judge finds itself carry the item they judge, so none is
// paired with the wrong one; a verdict count the case fixes is checked and
// bounded in the schema.
package content

import (
	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/sdk"
)

// Names and version of the plugin and its kinds.
const (
	PluginName          = "content"
	Version             = "1.0.0"
	KindBias            = "bias"
	KindToxicity        = "toxicity"
	KindPIILeakage      = "pii_leakage"
	KindPromptAlignment = "prompt_alignment"
	KindSummarization   = "summarization"
)

// Judge-call purposes, for the host's accounting.
const (
	PurposeVerdicts  = judged.PurposeVerdicts
	PurposeReason    = judged.PurposeReason
	PurposeClaims    = "claims"
	PurposeQuestions = "questions"
	PurposeAnswers   = "answers"
)

// Plugin returns the content plugin, for linking into the host or serving
// from a Wasm module.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         PluginName,
		Version:      Version,
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds: []sdk.Kind{
			findKind(biasFind), findKind(toxicityFind), findKind(piiFind),
			PromptAlignmentKind(), SummarizationKind(),
		},
	}
}

// Details are MeasureResult.Details of every kind.
type Details struct {
	Kind string `json:"kind"`
	// Verdicts judge the items: opinions (bias, toxicity), statements
	// (pii_leakage), instructions (prompt_alignment), the summary's claims
	// (summarization's alignment).
	Verdicts []judged.Verdict `json:"verdicts"`
	Counts   judged.Counts    `json:"counts"`
	// Failed are the indexes into Verdicts of the items that did not pass.
	Failed []int `json:"failed"`
	// Formula is the score's arithmetic with the numbers put in.
	Formula string `json:"formula"`
	// Rate is DeepEval's score of bias and toxicity, failing / opinions
	// (lower is better there); the score is 1 minus it.
	Rate *float64 `json:"rate,omitempty"`
	// Summarization: the sub-scores, and the coverage questions with both
	// answers (Source says whether the config or the judge wrote them).
	Alignment *float64   `json:"alignment,omitempty"`
	Coverage  *float64   `json:"coverage,omitempty"`
	Questions []Question `json:"questions,omitempty"`
	// QuestionsFrom is "config" or "judge".
	QuestionsFrom string `json:"questions_from,omitempty"`
	judged.Trail
}

// Question is one coverage question and its answers from the original
// text and from the summary ("yes", "no" or "idk").
type Question struct {
	Question string `json:"question"`
	Original string `json:"original"`
	Summary  string `json:"summary"`
	// Counted: the original answers "yes", so the question is in coverage's
	// denominator; Covered: the summary answers "yes" too.
	Counted bool `json:"counted"`
	Covered bool `json:"covered"`
}

// Package rag provides Anvil's statement→verdict metric kinds:
//
//   - "answer_relevancy" (fields input, actual_output): the judge breaks the
//     actual output into statements, then judges in ONE batched call whether
//     each statement is relevant to the input (yes / no / idk). Score =
//     (yes + idk) / n, or yes / n with idk_counts_as: no.
//   - "faithfulness" (fields actual_output, retrieval_context): the judge
//     extracts the actual output's factual claims, then judges in ONE
//     batched call whether the retrieval context supports (yes),
//     contradicts (no) or does not mention (idk) each claim. Score =
//     (n − no) / n, or yes / n with idk_counts_as: no.
//
// and the retrieval-context kinds, each ONE verdict call per case:
//
//   - "contextual_precision" (input, expected_output, retrieval_context):
//     each ranked node useful for the expected output (yes / no); score =
//     weighted cumulative precision, Σ_k rel_k · precision@k / useful.
//   - "contextual_recall" (expected_output, retrieval_context): the judge
//     splits the expected output into sentences and judges each
//     attributable to the context (yes / no); score = yes / n.
//   - "contextual_relevancy" (input, retrieval_context): the judge splits
//     every node into statements and judges each relevant to the input
//     (yes / no); score = yes / n over all nodes.
//   - "hallucination" (actual_output, context): each context agreed with
//     (yes), contradicted (no) or not addressed (idk) by the actual
//     output; score = 1 − no / n (DeepEval's rate, no / n, inverted so
//     that higher is better, as the host's one pass rule needs).
//
// They keep DeepEval's semantics (its AnswerRelevancy, Faithfulness,
// ContextualPrecision, ContextualRecall, ContextualRelevancy and
// Hallucination) and fix its known defects (docs/metrics.md lists them):
//   - the number of verdicts is checked against the number of items (and,
//     where the case fixes it, bounded in the schema): a
//     mismatch (or a verdict that is not yes/no/idk) gets one repair attempt
//     with the problem stated to the judge, then a judge_error naming the
//     counts — never a silent zip of mismatched lists or a score over the
//     wrong denominator;
//   - the reason is built deterministically from the failing items (their
//     text, verdict and the judge's reason for it), so a case costs two judge
//     calls, not three; reason_call: true buys one extra call for prose;
//   - faithfulness judges claims against the retrieval context directly by
//     default — DeepEval always spends a call extracting "truths" first;
//     extract_truths / truths_limit bring that step back, sent in the same
//     judge batch as the claims extraction (the host runs it concurrently),
//     and truths_limit is enforced, not just asked for;
//   - every call is at temperature 0, and the details record the items,
//     every verdict, the counts, the score formula, the failing items and
//     the usage of every call.
//
// Zero items: when the judge finds no statement (no claim) in the actual
// output, the score is 1 with reason "no statements" ("no claims") — there
// is nothing irrelevant (unfaithful) in it — and no verdict call is made.
// This matches DeepEval's score; it is reported, not silent.
//
// Invariants: the kinds talk to the judge only through sdk.Host; judge
// faults are returned as the *abi.Error the host gave, so their code
// (judge_error, budget_exhausted, capability_denied, …) survives.
package rag

import (
	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/sdk"
)

// Names and version of the plugin and its kinds.
const (
	PluginName          = "rag"
	Version             = "1.0.0"
	KindAnswerRelevancy = "answer_relevancy"
	KindFaithfulness    = "faithfulness"

	KindContextualPrecision = "contextual_precision"
	KindContextualRecall    = "contextual_recall"
	KindContextualRelevancy = "contextual_relevancy"
	KindHallucination       = "hallucination"
)

// Judge-call purposes, for the host's accounting.
const (
	PurposeStatements = "statements"
	PurposeClaims     = "claims"
	PurposeTruths     = "truths"
	PurposeVerdicts   = judged.PurposeVerdicts
	PurposeReason     = judged.PurposeReason
)

// Verdict values.
const (
	VerdictYes = judged.Yes
	VerdictNo  = judged.No
	VerdictIdk = judged.Idk
)

// Reason sources, as reported in details.reason_source.
const (
	ReasonFromItems = judged.ReasonFromItems // built from the failing items, no judge call
	ReasonFromJudge = judged.ReasonFromJudge // written by the judge (reason_call)
)

// Plugin returns the rag plugin, for linking into the host or serving from
// a Wasm module.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         PluginName,
		Version:      Version,
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds: []sdk.Kind{AnswerRelevancyKind(), FaithfulnessKind(),
			ContextualPrecisionKind(), ContextualRecallKind(), ContextualRelevancyKind(), HallucinationKind()},
	}
}

// AnswerRelevancyKind returns the answer_relevancy metric kind.
func AnswerRelevancyKind() *sdk.MetricKind[AnswerRelevancyConfig] {
	return &sdk.MetricKind[AnswerRelevancyConfig]{
		Name:           KindAnswerRelevancy,
		Description:    "Answer relevancy: the share of the actual output's statements that are relevant to the input (statements extracted, then judged in one call)",
		RequiredFields: []string{abi.FieldInput, abi.FieldActualOutput},
		Validate: func(c *AnswerRelevancyConfig) error {
			_, err := resolveRelevancy(c)
			return err
		},
		Measure: measureRelevancy,
	}
}

// FaithfulnessKind returns the faithfulness metric kind.
func FaithfulnessKind() *sdk.MetricKind[FaithfulnessConfig] {
	return &sdk.MetricKind[FaithfulnessConfig]{
		Name:           KindFaithfulness,
		Description:    "Faithfulness: the share of the actual output's claims that the retrieval context does not contradict (claims extracted, then judged in one call)",
		RequiredFields: []string{abi.FieldActualOutput, abi.FieldRetrievalContext},
		Validate: func(c *FaithfulnessConfig) error {
			_, err := resolveFaithfulness(c)
			return err
		},
		Measure: measureFaithfulness,
	}
}

// Details are MeasureResult.Details of every kind.
type Details struct {
	Kind string `json:"kind"`
	// Statements (answer_relevancy) or Claims (faithfulness) are the items
	// extracted from the actual output, in order; Verdicts[i] judges item i.
	Statements []string `json:"statements,omitempty"`
	Claims     []string `json:"claims,omitempty"`
	// Truths are the truths extracted from the retrieval context
	// (faithfulness with extract_truths); the claims were judged against them.
	Truths   []string  `json:"truths,omitempty"`
	Verdicts []Verdict `json:"verdicts"`
	Counts   Counts    `json:"counts"`
	// Failed are the indexes (0-based) into Verdicts of the items that did
	// not pass, in order.
	Failed []int `json:"failed"`
	// Formula is the score's arithmetic, e.g. "(yes + idk) / n = (2 + 1) / 4 = 0.75".
	Formula string `json:"formula"`
	// HallucinationRate is DeepEval's hallucination score, contradicted
	// contexts / contexts (hallucination; the score is 1 minus it).
	HallucinationRate *float64 `json:"hallucination_rate,omitempty"`
	// IdkCountsAs is the statement metrics' idk_counts_as.
	IdkCountsAs string `json:"idk_counts_as,omitempty"`
	judged.Trail
}

// Verdict is the judgement of one item.
type Verdict = judged.Verdict

// Counts are the verdicts per value.
type Counts = judged.Counts

// Usage is the accounting of every judge call a case made.
type Usage = judged.Usage

// CallUsage is the accounting of one judge call.
type CallUsage = judged.CallUsage

package rag

import (
	"github.com/agentanvil/anvil/abi"
)

// Values of idk_counts_as.
const (
	IdkYes = "yes" // an "idk" verdict passes (DeepEval's behaviour; the default)
	IdkNo  = "no"  // an "idk" verdict fails (DeepEval's penalize_ambiguous_claims)
)

// AnswerRelevancyConfig is the configuration of the answer_relevancy
// metric kind. Every field is optional; the threshold is the metric's
// threshold (MeasureRequest.Threshold), not a config field.
type AnswerRelevancyConfig struct {
	IdkCountsAs string `json:"idk_counts_as,omitempty" jsonschema:"enum=yes,enum=no,default=yes" jsonschema_description:"How an \"idk\" verdict (a statement that is ambiguous: not directly relevant, but possibly a supporting point) counts in the score: yes (default, as DeepEval) counts it as relevant, no counts it as irrelevant and lists it among the failing statements."`
	StrictMode  bool   `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if every verdict passes, else 0; the threshold is forced to 1."`
	ReasonCall  bool   `json:"reason_call,omitempty" jsonschema_description:"Make one extra judge call (purpose \"reason\") that writes the reason as prose. Default false: the reason is built deterministically from the failing statements and their verdict reasons, with no extra call."`
}

// FaithfulnessConfig is the configuration of the faithfulness metric kind.
// Every field is optional; the threshold is the metric's threshold.
type FaithfulnessConfig struct {
	IdkCountsAs   string `json:"idk_counts_as,omitempty" jsonschema:"enum=yes,enum=no,default=yes" jsonschema_description:"How an \"idk\" verdict (a claim the retrieval context neither supports nor contradicts) counts in the score: yes (default, as DeepEval) counts it as faithful, no counts it as unfaithful (DeepEval's penalize_ambiguous_claims) and lists it among the failing claims."`
	StrictMode    bool   `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if every verdict passes, else 0; the threshold is forced to 1."`
	ReasonCall    bool   `json:"reason_call,omitempty" jsonschema_description:"Make one extra judge call (purpose \"reason\") that writes the reason as prose. Default false: the reason is built deterministically from the failing claims and their verdict reasons, with no extra call."`
	ExtractTruths bool   `json:"extract_truths,omitempty" jsonschema_description:"First extract the factual truths of the retrieval context (one extra judge request, sent in the same batch as the claims extraction) and judge the claims against those truths instead of the raw context. Default false: the claims are judged against the retrieval context itself."`
	TruthsLimit   int    `json:"truths_limit,omitempty" jsonschema:"minimum=0" jsonschema_description:"Extract at most this many truths (the most important ones) from the retrieval context, as DeepEval's truths_extraction_limit; extra truths the judge returns are dropped. Setting it (> 0) implies extract_truths. 0 (default): no limit when extract_truths is on."`
}

// setup is a config resolved into what a kind acts on.
type setup struct {
	idkPass     bool
	strict      bool
	reasonCall  bool
	truths      bool // extract truths first (faithfulness)
	truthsLimit int  // 0: no limit
}

func (s *setup) idkCountsAs() string {
	if s.idkPass {
		return IdkYes
	}
	return IdkNo
}

func invalid(field, format string, args ...any) *abi.Error {
	e := abi.Errorf(abi.CodeInvalidConfig, format, args...)
	e.Field = field
	return e
}

func resolveIdk(v string) (bool, error) {
	switch v {
	case "", IdkYes:
		return true, nil
	case IdkNo:
		return false, nil
	}
	return false, invalid("idk_counts_as", "idk_counts_as is %q; want \"yes\" or \"no\"", v)
}

func resolveRelevancy(c *AnswerRelevancyConfig) (*setup, error) {
	idk, err := resolveIdk(c.IdkCountsAs)
	if err != nil {
		return nil, err
	}
	return &setup{idkPass: idk, strict: c.StrictMode, reasonCall: c.ReasonCall}, nil
}

func resolveFaithfulness(c *FaithfulnessConfig) (*setup, error) {
	idk, err := resolveIdk(c.IdkCountsAs)
	if err != nil {
		return nil, err
	}
	if c.TruthsLimit < 0 {
		return nil, invalid("truths_limit", "truths_limit is %d; want >= 0 (0: no limit)", c.TruthsLimit)
	}
	return &setup{
		idkPass: idk, strict: c.StrictMode, reasonCall: c.ReasonCall,
		truths: c.ExtractTruths || c.TruthsLimit > 0, truthsLimit: c.TruthsLimit,
	}, nil
}

// ContextConfig is the configuration of the retrieval-context kinds
// (contextual_precision, contextual_recall, contextual_relevancy,
// hallucination). Every field is optional; the threshold is the metric's
// threshold.
type ContextConfig struct {
	StrictMode bool `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if the score is 1 (every verdict passes; for contextual_precision, every useful node ranked above every other), else 0; the threshold is forced to 1."`
	ReasonCall bool `json:"reason_call,omitempty" jsonschema_description:"Make one extra judge call (purpose \"reason\") that writes the reason as prose. Default false: the reason is built deterministically from the verdicts, with no extra call."`
}

func resolveContext(c *ContextConfig) (*setup, error) {
	return &setup{strict: c.StrictMode, reasonCall: c.ReasonCall}, nil
}

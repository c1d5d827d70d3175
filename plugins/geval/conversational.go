package geval

import (
	"context"
	"slices"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// ConversationalKindName is the kind that scores a whole conversation
// with G-Eval: DeepEval's ConversationalGEval.
const ConversationalKindName = "conversational_geval"

// ConversationalConfig configures conversational_geval: Config's fields,
// with evaluation_params optional (default [turns]) and bound to include
// turns. The two types convert into each other (same fields).
type ConversationalConfig struct {
	Name        string `json:"name,omitempty" jsonschema_description:"Name of the quality being judged (e.g. Helpfulness); shown to the judge in the scoring prompt."`
	Description string `json:"description,omitempty" jsonschema_description:"One-line description of the metric; shown to the judge in the scoring prompt."`

	Criteria        string   `json:"criteria,omitempty" jsonschema_description:"What to judge in the conversation, in plain language. Evaluation steps are generated from it once per run (and cached across runs). Give criteria or evaluation_steps; with both, the steps win (with a warning)."`
	EvaluationSteps []string `json:"evaluation_steps,omitempty" jsonschema_description:"Explicit evaluation steps the judge follows, in order. When given, no steps are generated and criteria, if also given, are ignored (with a warning)." jsonschema:"minItems=1"`

	EvaluationParams []string `json:"evaluation_params,omitempty" jsonschema:"minItems=1" jsonschema_description:"Case fields the judge sees, in order; must include turns (default [turns]). Also: scenario, expected_outcome, chatbot_role, context, or a free-form field of the case. A case lacking one is recorded as missing_field."`

	Rubric     []RubricBand `json:"rubric,omitempty" jsonschema_description:"Score bands with their expected outcomes: integers in 0-10, sorted, non-overlapping (gaps are a warning). When given, the score range is the rubric's range."`
	ScoreRange []int        `json:"score_range,omitempty" jsonschema:"minItems=2,maxItems=2,minimum=0" jsonschema_description:"[min, max] integer score range the judge uses (default [0, 10]); max > min. With a rubric it must equal the rubric's range."`

	StrictMode bool `json:"strict_mode,omitempty" jsonschema_description:"Binary judgement: the judge answers 1 (fully meets the steps) or 0; the score is that integer (score_mode raw, cause \"strict mode\") and the threshold is forced to 1. Excludes rubric and score_range."`

	TopLogprobs *int  `json:"top_logprobs,omitempty" jsonschema:"minimum=0,default=20" jsonschema_description:"Alternatives per token asked of the judge for logprob weighting of the score (default 20, capped by the judge's configuration); 0 asks for none, which makes the score raw."`
	Samples     int   `json:"samples,omitempty" jsonschema:"minimum=0,default=0" jsonschema_description:"Sampling fallback for judges without logprobs: that many samples (>= 2), mean taken (score_mode sampled). 0 (default) turns it off."`
	Reason      *bool `json:"reason,omitempty" jsonschema:"default=true" jsonschema_description:"Ask for a reason in the same scoring call (default true; no extra call). false asks for the score only."`
}

// geval is the Config the G-Eval machinery runs: the defaults applied.
func (c *ConversationalConfig) geval() *Config {
	cfg := Config(*c)
	if len(cfg.EvaluationParams) == 0 {
		cfg.EvaluationParams = []string{abi.FieldTurns}
	}
	return &cfg
}

// singleTurn are fields a conversational case never has (the dataset
// reader refuses them beside turns): a conversational metric asking for
// one would skip every case.
var singleTurn = []string{
	abi.FieldInput, abi.FieldActualOutput, abi.FieldExpectedOutput,
	abi.FieldRetrievalContext, abi.FieldToolsCalled, abi.FieldExpectedTools,
}

// conversationalParams checks conversational_geval's own rules, beyond
// what resolve checks for both kinds.
func conversationalParams(cfg *Config) error {
	for _, p := range cfg.EvaluationParams {
		if slices.Contains(singleTurn, p) {
			return invalid("evaluation_params", "evaluation_params: %s is a single-turn field, which a conversational case has only inside its turns; show the judge turns", p)
		}
	}
	if !slices.Contains(cfg.EvaluationParams, abi.FieldTurns) {
		return invalid("evaluation_params", "evaluation_params must include turns: the conversation is what conversational_geval judges")
	}
	return nil
}

// ConversationalKind returns the conversational_geval metric kind: G-Eval
// over a conversation's turns, with geval's step generation (once per
// run, cached across runs), logprob weighting, rubric and strict mode.
// The prompts are geval's with the note that the case is a conversation
// (conversationNote), so geval's own prompts are unchanged.
func ConversationalKind() *sdk.MetricKind[ConversationalConfig] {
	ps := new(plans)
	return &sdk.MetricKind[ConversationalConfig]{
		Name:        ConversationalKindName,
		Description: "Conversational G-Eval: an LLM judge follows evaluation steps over a conversation's turns and writes an integer score, weighted by its token log-probabilities",
		Fields:      func(cfg *ConversationalConfig) []string { return cfg.geval().EvaluationParams },
		Validate: func(cfg *ConversationalConfig) error {
			g := cfg.geval()
			if err := conversationalParams(g); err != nil {
				return err
			}
			_, err := resolve(g)
			return err
		},
		Prepare: func(ctx context.Context, h sdk.Host, cfg *ConversationalConfig, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
			g := cfg.geval()
			if err := conversationalParams(g); err != nil {
				return nil, err
			}
			return prepare(ctx, h, g, req)
		},
		Measure: func(ctx context.Context, h sdk.Host, cfg *ConversationalConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			g := cfg.geval()
			if err := conversationalParams(g); err != nil {
				return nil, err
			}
			return measure(ctx, h, ps, g, req)
		},
	}
}

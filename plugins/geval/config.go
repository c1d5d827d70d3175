package geval

import (
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/score"
)

// Defaults of the optional config fields.
const (
	DefaultTopLogprobs = 20
	DefaultMin         = 0
	DefaultMax         = 10
)

// Config is the configuration of the geval metric kind. Criteria or
// EvaluationSteps is needed; when both are given the steps win and the
// criteria are ignored with a warning (never silently).
type Config struct {
	// Name and Description name the metric inside the scoring prompt.
	Name        string `json:"name,omitempty" jsonschema_description:"Name of the quality being judged (e.g. Correctness); shown to the judge in the scoring prompt."`
	Description string `json:"description,omitempty" jsonschema_description:"One-line description of the metric; shown to the judge in the scoring prompt."`

	Criteria        string   `json:"criteria,omitempty" jsonschema_description:"What to judge, in plain language. Evaluation steps are generated from it once per run (and cached across runs). Give criteria or evaluation_steps; with both, the steps win (with a warning)."`
	EvaluationSteps []string `json:"evaluation_steps,omitempty" jsonschema_description:"Explicit evaluation steps the judge follows, in order. When given, no steps are generated and criteria, if also given, are ignored (with a warning)." jsonschema:"minItems=1"`

	EvaluationParams []string `json:"evaluation_params" jsonschema:"required,minItems=1" jsonschema_description:"Test-case fields the judge sees, in order: input, actual_output, expected_output, context, retrieval_context, tools_called, expected_tools, or a free-form field of the case. A case lacking one is recorded as missing_field."`

	Rubric     []RubricBand `json:"rubric,omitempty" jsonschema_description:"Score bands with their expected outcomes: integers in 0-10, sorted, non-overlapping (gaps are a warning). When given, the score range is the rubric's range."`
	ScoreRange []int        `json:"score_range,omitempty" jsonschema:"minItems=2,maxItems=2,minimum=0" jsonschema_description:"[min, max] integer score range the judge uses (default [0, 10]); max > min. With a rubric it must equal the rubric's range."`

	StrictMode bool `json:"strict_mode,omitempty" jsonschema_description:"Binary judgement: the judge answers 1 (fully meets the steps) or 0; the score is that integer (score_mode raw, cause \"strict mode\") and the threshold is forced to 1. Excludes rubric and score_range."`

	TopLogprobs *int  `json:"top_logprobs,omitempty" jsonschema:"minimum=0,default=20" jsonschema_description:"Alternatives per token asked of the judge for logprob weighting of the score (default 20, capped by the judge's configuration); 0 asks for none, which makes the score raw."`
	Samples     int   `json:"samples,omitempty" jsonschema:"minimum=0,default=0" jsonschema_description:"Sampling fallback for judges without logprobs: that many samples (>= 2), mean taken (score_mode sampled). 0 (default) turns it off."`
	Reason      *bool `json:"reason,omitempty" jsonschema:"default=true" jsonschema_description:"Ask for a reason in the same scoring call (default true; no extra call). false asks for the score only."`
}

// RubricBand is one rubric band as configured (DeepEval's Rubric shape), and
// as Details.RubricBand reports it.
type RubricBand struct {
	ScoreRange      []int  `json:"score_range" jsonschema:"required,minItems=2,maxItems=2,minimum=0,maximum=10" jsonschema_description:"[start, end], inclusive integers in 0-10; start <= end."`
	ExpectedOutcome string `json:"expected_outcome" jsonschema:"required" jsonschema_description:"What a test case scoring in this band looks like."`
}

// setup is a Config resolved into what the kind acts on.
type setup struct {
	cfg      *Config
	criteria string   // trimmed; "" when the steps are provided
	steps    []string // provided steps, nil when they are generated
	bands    []score.Band
	min, max int
	strict   bool
	top      int
	samples  int
	reason   bool
	warnings []string
}

func invalid(field, format string, args ...any) *abi.Error {
	e := abi.Errorf(abi.CodeInvalidConfig, format, args...)
	e.Field = field
	return e
}

// resolve checks cfg beyond its schema and applies defaults. Errors are
// invalid_config *abi.Errors naming the config field.
func resolve(cfg *Config) (*setup, error) {
	s := &setup{cfg: cfg, reason: true, top: DefaultTopLogprobs, strict: cfg.StrictMode}

	if len(cfg.EvaluationParams) == 0 {
		return nil, invalid("evaluation_params", "evaluation_params is required: name the test-case fields the judge sees (e.g. [input, actual_output])")
	}
	seen := map[string]bool{}
	for i, p := range cfg.EvaluationParams {
		if strings.TrimSpace(p) == "" || p != strings.TrimSpace(p) {
			return nil, invalid("evaluation_params", "evaluation_params[%d] %q is not a field name", i, p)
		}
		if seen[p] {
			return nil, invalid("evaluation_params", "evaluation_params lists %q twice", p)
		}
		seen[p] = true
	}

	criteria := strings.TrimSpace(cfg.Criteria)
	if len(cfg.EvaluationSteps) > 0 {
		if criteria != "" {
			// The design: steps win. A config that grew steps beside its
			// criteria still runs, but never silently: the warning reaches
			// validate and run alike (both call this check).
			s.warnings = append(s.warnings, "both criteria and evaluation_steps are given: the evaluation_steps are used and the criteria ignored")
		}
		for i, st := range cfg.EvaluationSteps {
			st = strings.TrimSpace(st)
			if st == "" {
				return nil, invalid("evaluation_steps", "evaluation_steps[%d] is empty", i)
			}
			s.steps = append(s.steps, st)
		}
	} else {
		if criteria == "" {
			return nil, invalid("criteria", "give criteria or evaluation_steps")
		}
		s.criteria = criteria
	}

	if cfg.TopLogprobs != nil {
		if *cfg.TopLogprobs < 0 {
			return nil, invalid("top_logprobs", "top_logprobs is %d; want >= 0", *cfg.TopLogprobs)
		}
		s.top = *cfg.TopLogprobs
	}
	switch {
	case cfg.Samples < 0:
		return nil, invalid("samples", "samples is %d; want 0 (off) or >= 2", cfg.Samples)
	case cfg.Samples == 1:
		return nil, invalid("samples", "samples is 1; a sampling fallback needs >= 2 samples (0 turns it off)")
	}
	s.samples = cfg.Samples
	if cfg.Reason != nil {
		s.reason = *cfg.Reason
	}

	if cfg.StrictMode {
		if len(cfg.Rubric) > 0 {
			return nil, invalid("rubric", "strict_mode scores 0 or 1: a rubric does not apply")
		}
		if len(cfg.ScoreRange) > 0 {
			return nil, invalid("score_range", "strict_mode scores 0 or 1: score_range does not apply")
		}
		if cfg.Samples > 0 {
			s.warnings = append(s.warnings, "samples is ignored in strict_mode (the score is the judge's 0 or 1)")
		}
		if cfg.TopLogprobs != nil {
			s.warnings = append(s.warnings, "top_logprobs is ignored in strict_mode (the score is the judge's 0 or 1)")
		}
		s.min, s.max = 0, 1
		return s, nil
	}

	s.min, s.max = DefaultMin, DefaultMax
	if len(cfg.Rubric) > 0 {
		for i, b := range cfg.Rubric {
			if len(b.ScoreRange) != 2 {
				return nil, invalid("rubric", "rubric[%d].score_range has %d values; want [start, end]", i, len(b.ScoreRange))
			}
			if strings.TrimSpace(b.ExpectedOutcome) == "" {
				return nil, invalid("rubric", "rubric[%d].expected_outcome is empty", i)
			}
			s.bands = append(s.bands, score.Band{Start: b.ScoreRange[0], End: b.ScoreRange[1], Expected: strings.TrimSpace(b.ExpectedOutcome)})
		}
		warns, err := score.ValidateRubric(s.bands)
		if err != nil {
			return nil, invalid("rubric", "rubric: %v", err)
		}
		s.warnings = append(s.warnings, warns...)
		s.min, s.max = score.RubricRange(s.bands)
	}
	if len(cfg.ScoreRange) > 0 {
		if len(cfg.ScoreRange) != 2 {
			return nil, invalid("score_range", "score_range has %d values; want [min, max]", len(cfg.ScoreRange))
		}
		lo, hi := cfg.ScoreRange[0], cfg.ScoreRange[1]
		switch {
		case lo < 0:
			return nil, invalid("score_range", "score_range [%d, %d]: min must be >= 0", lo, hi)
		case hi == lo:
			return nil, invalid("score_range", "score_range [%d, %d] has zero width", lo, hi)
		case hi < lo:
			return nil, invalid("score_range", "score_range [%d, %d]: max must be greater than min", lo, hi)
		}
		if len(s.bands) > 0 && (lo != s.min || hi != s.max) {
			return nil, invalid("score_range", "score_range [%d, %d] differs from the rubric's range [%d, %d]; drop score_range or make them equal", lo, hi, s.min, s.max)
		}
		s.min, s.max = lo, hi
	}
	if _, err := score.Normalize(float64(s.min), s.min, s.max); err != nil {
		return nil, invalid("score_range", "score range [%d, %d]: %v", s.min, s.max, err)
	}
	return s, nil
}

// bandOut reports a band in the shape it is configured in.
func bandOut(b score.Band) *RubricBand {
	return &RubricBand{ScoreRange: []int{b.Start, b.End}, ExpectedOutcome: b.Expected}
}

func rangeText(b score.Band) string {
	if b.Start == b.End {
		return fmt.Sprint(b.Start)
	}
	return fmt.Sprintf("%d-%d", b.Start, b.End)
}

package geval

import (
	"encoding/json"
	"slices"
	"sync/atomic"

	"github.com/agentanvil/anvil/abi"
)

// A plan is what every case of one metric shares: the resolved config,
// the prepared steps, the scoring prompt less the case and the reply's
// schema. Measure makes one per metric and reuses it for every case of
// that metric, instead of resolving the config, decoding the steps and
// rendering the prompt's constant parts per case.
//
// Invariants: a plan is keyed by the config's value and the prepared
// state's bytes, so a metric never gets another's plan; it is built from
// a copy of the config it is keyed by, so no caller can change it after;
// and once published it is never written, so concurrent Measure calls
// share it without locks. What a plan hands out (schema, steps, warnings)
// is read, never written, by the kind and the host.
type plan struct {
	cfg      Config // a copy of the config the plan was made from
	prepared string // the PrepareResult.State it was made from

	s      *setup
	st     *State
	prompt *scorePrompt
	schema json.RawMessage
}

// maxPlans bounds the plans a kind keeps: the metrics of one run using
// the kind at the same time, more than a run usually has.
const maxPlans = 8

// plans are a kind's plans, newest first: a list published whole,
// replaced (never changed) to add one.
type plans struct {
	list atomic.Pointer[[]*plan]
}

// get returns the plan of cfg and prepared, making it if need be. Its
// errors are those Measure gave before plans: resolve's, then the
// prepared state's.
func (ps *plans) get(cfg *Config, prepared json.RawMessage) (*plan, error) {
	old := ps.list.Load()
	if old != nil {
		for _, p := range *old {
			if p.prepared == string(prepared) && sameConfig(&p.cfg, cfg) {
				return p, nil
			}
		}
	}
	p := &plan{cfg: cloneConfig(cfg), prepared: string(prepared)}
	s, err := resolve(&p.cfg)
	if err != nil {
		return nil, err
	}
	st := new(State)
	if err := json.Unmarshal(prepared, st); err != nil || len(st.Steps) == 0 {
		return nil, abi.Errorf(abi.CodeMetric, "geval: prepared state is not a list of steps: %s", prepared)
	}
	p.fill(s, st)
	// Another goroutine may publish in between; its plan is then dropped
	// and made again when next needed, which costs time, not correctness.
	list := []*plan{p}
	if old != nil {
		list = append(list, (*old)[:min(len(*old), maxPlans-1)]...)
	}
	ps.list.Store(&list)
	return p, nil
}

// fill sets what a plan derives from the setup and the steps; a plan of
// generated steps (no Prepare) is made this way per case, not kept.
func (p *plan) fill(s *setup, st *State) {
	p.s, p.st = s, st
	p.prompt = newScorePrompt(s, st.Steps)
	p.schema = scoreSchema(s.min, s.max, s.reason)
}

// sameConfig reports whether a and b are the same config: every field
// equal (TestSameConfigSeesEveryField checks none is left out). A nil
// and an empty slice count as equal, as resolve treats them alike.
func sameConfig(a, b *Config) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Criteria == b.Criteria &&
		slices.Equal(a.EvaluationSteps, b.EvaluationSteps) &&
		slices.Equal(a.EvaluationParams, b.EvaluationParams) &&
		slices.EqualFunc(a.Rubric, b.Rubric, func(x, y RubricBand) bool {
			return x.ExpectedOutcome == y.ExpectedOutcome && slices.Equal(x.ScoreRange, y.ScoreRange)
		}) &&
		slices.Equal(a.ScoreRange, b.ScoreRange) && a.StrictMode == b.StrictMode &&
		sameInt(a.TopLogprobs, b.TopLogprobs) && a.Samples == b.Samples && sameBool(a.Reason, b.Reason)
}

func sameInt(a, b *int) bool   { return a == nil && b == nil || a != nil && b != nil && *a == *b }
func sameBool(a, b *bool) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// cloneConfig is a copy of c sharing no memory with it.
func cloneConfig(c *Config) Config {
	out := *c
	out.EvaluationSteps = slices.Clone(c.EvaluationSteps)
	out.EvaluationParams = slices.Clone(c.EvaluationParams)
	out.ScoreRange = slices.Clone(c.ScoreRange)
	if c.Rubric != nil {
		out.Rubric = make([]RubricBand, len(c.Rubric))
		for i, b := range c.Rubric {
			out.Rubric[i] = RubricBand{ScoreRange: slices.Clone(b.ScoreRange), ExpectedOutcome: b.ExpectedOutcome}
		}
	}
	if c.TopLogprobs != nil {
		v := *c.TopLogprobs
		out.TopLogprobs = &v
	}
	if c.Reason != nil {
		v := *c.Reason
		out.Reason = &v
	}
	return out
}

package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/score"
)

// Sources of a cascade judge's P(pass), as results record them.
const (
	// PPassCandidates: the candidates of the one score the scoring asked
	// for (log-probabilities, or the judge layer's sampled frequencies).
	PPassCandidates = "candidates"
	// PPassSamples: the share of the metric's samples that pass.
	PPassSamples = "samples"
	// PPassVerdict: a single score with no distribution (a raw score, a
	// strict-mode 0 or 1, a DAG walked once): 0 or 1, never escalated.
	PPassVerdict = "verdict"
)

// measureCascade scores the case with each judge of the metric's cascade
// in turn, cheapest first, until one is sure: a judge decides when its
// P(pass) is outside the escalate band, or when it is the last. Each
// judge scores the whole metric (a G-Eval, a plugin kind, or a DAG walk
// with every judge node routed to it) with the metric's samples; what it
// costs is summed into the result. A judge error of a judge that is not
// the last hands the case on too; any other error or skip (a missing
// field, a plugin fault) decides, since another judge would meet it again.
// In an estimate every judge is asked: the estimate is an upper bound.
//
// P(pass) is against the metric's threshold as the host applies it, a
// fraction of [0,1]: a score's candidates are normalised from the score
// range as the score is (score.PassProbability). strict_mode sets the
// threshold to 1 and has the judge write 0 or 1 with no distribution, so a
// strict metric's P(pass) is the share of its samples that are 1 (or its
// verdict, with one sample).
func (e *Engine) measureCascade(ctx context.Context, m *metric, c *abi.TestCase, dry *dryRun, r results.MetricResult) results.MetricResult {
	var usage results.JudgeUsage
	var fuel uint64
	var because []string
	var out results.MetricResult
	var lastP *float64
	var lastFrom string
	for i, name := range m.cascade {
		base := results.MetricResult{Metric: r.Metric, Kind: r.Kind, Gated: r.Gated, Threshold: r.Threshold}
		if m.samples > 1 {
			out = e.measureRepeated(ctx, m, c, dry, base, []string{name}, true)
		} else {
			model := ""
			if j := e.judges.byName[name]; j != nil {
				model = j.Model()
			}
			out = e.score(ctx, m, c, dry, scoring{judge: name, model: model, capture: true}, base)
			if out.PPass == nil && out.Score != nil {
				p := 0.0
				if out.Status == results.StatusPassed {
					p = 1
				}
				out.PPass, out.PPassFrom = &p, PPassVerdict
			}
		}
		usage.Merge(out.Usage)
		fuel += out.Fuel
		if i == len(m.cascade)-1 {
			break
		}
		why := escalation(m, name, &out, dry != nil)
		if why == "" {
			lastP, lastFrom = out.PPass, out.PPassFrom
			break
		}
		because = append(because, why)
		lastP, lastFrom = out.PPass, out.PPassFrom
	}
	out.EscalatedBecause = strings.Join(because, "; ")
	out.PPass, out.PPassFrom = nil, ""
	if out.Score != nil {
		// A case decided; one skipped or in error was decided by no judge.
		out.DecidedBy = decider(m, len(because))
		out.PPass, out.PPassFrom = lastP, lastFrom
		out.StrongOnlyUSD = e.strongOnlyUSD(m, out.DecidedBy, out.Usage)
	}
	out.Usage, out.Fuel = usage, fuel
	return out
}

// judgesUsed are the judges the metric's cases call: its cascade, or its
// panel (one judge when it has none).
func (m *metric) judgesUsed() []string {
	if len(m.cascade) > 0 {
		return m.cascade
	}
	return m.panel
}

// decider is the judge that decided after n escalations.
func decider(m *metric, n int) string { return m.cascade[min(n, len(m.cascade)-1)] }

// escalation says why judge name's scoring hands the case to the next
// judge, or "" when it decides.
func escalation(m *metric, name string, r *results.MetricResult, estimate bool) string {
	switch {
	case estimate:
		return "estimate: every case counted as escalated (an upper bound)"
	case r.Status == results.StatusError && r.ErrorClass == "judge":
		return fmt.Sprintf("%s failed: %s", name, r.Error.Message)
	case r.Score == nil || r.PPass == nil:
		return ""
	}
	p := *r.PPass
	if p >= m.band[0] && p <= m.band[1] {
		return fmt.Sprintf("P(pass) %.4g from %s (%s) is inside [%g, %g]", p, name, r.PPassFrom, m.band[0], m.band[1])
	}
	return ""
}

// strongOnlyUSD estimates what the last judge of the cascade would have
// cost on this case: its own spending when it was asked; otherwise the
// deciding judge's tokens at the last judge's prices (as if uncached; two
// models' tokenizers count the same text differently, so it is an
// estimate).
func (e *Engine) strongOnlyUSD(m *metric, decidedBy string, decided results.JudgeUsage) *float64 {
	strong := m.cascade[len(m.cascade)-1]
	var usd float64
	if decidedBy == strong {
		usd = decided.USD
	} else if j := e.judges.byName[strong]; j != nil {
		usd = j.Price(decided.InputTokens, decided.OutputTokens)
	}
	return &usd
}

// passProbability is the P(pass) of a scoring that asked for exactly one
// score: its candidates' mass at or above the threshold. A scoring that
// asked for several (a kind combining scores) or none (a DAG's nodes, a
// strict-mode G-Eval) has no such probability: P is its verdict, 0 or 1.
func (s *services) passProbability(threshold float64) (*float64, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scores != nil && len(*s.scores) == 1 {
		sc := (*s.scores)[0]
		if sc.score != nil {
			if p, ok, err := score.PassProbability(*sc.score, sc.min, sc.max, threshold); err == nil && ok {
				return &p, PPassCandidates
			}
		}
	}
	return nil, ""
}

// samplesPassProbability is the P(pass) of one judge's samples: the mean of
// their candidates' P(pass) when every sample has one (a mixture of their
// distributions); else the share of samples that pass; for one sample
// without candidates, its verdict.
func samplesPassProbability(runs []results.MetricResult, threshold float64) (*float64, string) {
	var sum float64
	withP, passes, scored := 0, 0, 0
	for _, sr := range runs {
		if sr.Score == nil || sr.Error != nil {
			continue
		}
		scored++
		if verdict(*sr.Score, threshold) == results.StatusPassed {
			passes++
		}
		if sr.PPass != nil && sr.PPassFrom == PPassCandidates {
			withP++
			sum += *sr.PPass
		}
	}
	switch {
	case scored == 0:
		return nil, ""
	case withP == scored:
		p := sum / float64(withP)
		return &p, PPassCandidates
	case scored > 1:
		p := float64(passes) / float64(scored)
		return &p, PPassSamples
	}
	p := float64(passes)
	return &p, PPassVerdict
}

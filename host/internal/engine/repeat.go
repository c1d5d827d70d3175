package engine

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

// measureRepeated scores the case once per judge of the panel and sample,
// concurrently (each judge's own limits pace its calls), and combines them.
// The host decides on the mean: a judge's score is the mean of its
// samples, and the metric's verdict is that score (or the panel's
// aggregate of the judges' scores) against the threshold — for
// aggregate: majority, the judges' majority vote, a tie failing. Any
// scoring that ends in an error or a skip makes the case that error or
// skip: a mean over the samples that happened to succeed would hide the
// judge's faults. The reason and details are the first judge's first
// sample's (a DAG's path, a statement list).
func (e *Engine) measureRepeated(ctx context.Context, m *metric, c *abi.TestCase, dry *dryRun, r results.MetricResult, panel []string, capture bool) results.MetricResult {
	runs := make([][]results.MetricResult, len(panel))
	var wg sync.WaitGroup
	for ji, name := range panel {
		wg.Go(func() {
			runs[ji] = e.sampleJudge(ctx, m, c, dry, r, name, capture)
		})
	}
	wg.Wait()

	first := runs[0][0]
	r.Reason, r.ScoreMode, r.Details = first.Reason, first.ScoreMode, first.Details
	if r.Kind == KindDAG {
		r.DAGSpread = dagSpreadOf(runs)
	}
	votes := make([]results.PanelVote, len(panel))
	var bad *results.MetricResult
	for ji, name := range panel {
		v := results.PanelVote{Judge: name}
		if j := e.judges.byName[name]; j != nil {
			v.Model = j.Model()
		}
		var scores []float64
		for k := range runs[ji] {
			sr := &runs[ji][k]
			r.Usage.Merge(sr.Usage)
			// The scorings run at once: their compile waits overlap.
			r.CompileWaitMS = max(r.CompileWaitMS, sr.CompileWaitMS)
			if sr.Score != nil && sr.Error == nil {
				scores = append(scores, *sr.Score)
				continue
			}
			if bad == nil {
				bad = sr
			}
			if v.Status == "" {
				v.Status, v.Reason, v.Error = sr.Status, sr.Reason, sr.Error
			}
		}
		if v.Status == "" {
			sp := spreadOf(scores, r.Threshold)
			mean := sp.Mean
			v.Score, v.Status, v.Reason = &mean, verdict(mean, r.Threshold), runs[ji][0].Reason
			if len(scores) > 1 {
				if w := ciWidth(scores); w != nil && m.adaptive.Adaptive() {
					rounded := results.Round4(*w)
					sp.CIWidth = &rounded
				}
				v.Spread = &sp
			}
		}
		votes[ji] = v
	}
	if len(panel) > 1 {
		r.Panel, r.Aggregate = votes, m.aggregate
	} else {
		r.Spread = votes[0].Spread
	}
	if capture {
		r.PPass, r.PPassFrom = samplesPassProbability(runs[0], r.Threshold)
	}
	if bad != nil {
		if bad.Status == results.StatusSkipped && bad.Error == nil {
			r.Status, r.Reason = results.StatusSkipped, bad.Reason
			return r
		}
		e := bad.Error
		if e == nil {
			e = abi.Errorf(abi.CodeMetric, "a scoring ended %s: %s", bad.Status, bad.Reason)
		}
		setError(&r, e)
		return r
	}
	if m.adaptive.Adaptive() {
		for ji := range runs {
			r.SamplesTaken = max(r.SamplesTaken, len(runs[ji]))
		}
	}
	score, status, how := aggregate(votes, m.aggregate, r.Threshold)
	r.Score, r.Status = &score, status
	r.Reason = how + "; " + firstReason(m, panel, first.Reason)
	return r
}

// sampleJudge is one judge's scorings of the case: samples of them, all
// at once (sharing calls through a group where the judge supports n); or,
// for adaptive samples, min of them, then one more at a time until the
// 95% t interval of their mean is no wider than stop_at_ci_width or max
// are taken. A scoring that ends without a score stops the sampling: the
// case ends in its error whatever more samples would say.
func (e *Engine) sampleJudge(ctx context.Context, m *metric, c *abi.TestCase, dry *dryRun, r results.MetricResult, name string, capture bool) []results.MetricResult {
	model := ""
	j := e.judges.byName[name]
	if j != nil {
		model = j.Model()
	}
	batch := func(from, n int) []results.MetricResult {
		out := make([]results.MetricResult, n)
		var group *sampleGroup
		if n > 1 && j != nil && j.Config().SupportsN {
			group = newSampleGroup(j, dry, n, e.opts.sampleWindow)
		}
		var wg sync.WaitGroup
		for k := range n {
			wg.Go(func() {
				base := results.MetricResult{Metric: r.Metric, Kind: r.Kind, Gated: r.Gated, Threshold: r.Threshold}
				out[k] = e.score(ctx, m, c, dry, scoring{judge: name, model: model, sample: from + k, group: group, capture: capture}, base)
				if group != nil {
					group.done()
				}
			})
		}
		wg.Wait()
		return out
	}
	if !m.adaptive.Adaptive() || dry != nil {
		return batch(0, m.samples) // an estimate counts adaptive samples at their max
	}
	runs := batch(0, m.adaptive.MinSamples())
	for len(runs) < m.adaptive.Max {
		scores := make([]float64, 0, len(runs))
		for _, sr := range runs {
			if sr.Score == nil || sr.Error != nil {
				return runs
			}
			scores = append(scores, *sr.Score)
		}
		if w := ciWidth(scores); w != nil && *w <= m.adaptive.StopAtCIWidth {
			return runs
		}
		runs = append(runs, batch(len(runs), 1)...)
	}
	return runs
}

// ciWidth is the width of the 95% t interval of the mean of scores; nil
// when it has none (fewer than two scores).
func ciWidth(scores []float64) *float64 {
	ci, err := stats.MeanTCI(scores, 0.95)
	if err != nil {
		return nil
	}
	w := ci.High - ci.Low
	return &w
}

// aggregate combines the judges' scores as the metric says and decides
// the verdict, with a line saying how.
func aggregate(votes []results.PanelVote, how string, threshold float64) (float64, string, string) {
	if len(votes) == 1 {
		v := votes[0]
		if v.Spread == nil {
			return *v.Score, v.Status, fmt.Sprintf("score %.4g", *v.Score)
		}
		return *v.Score, v.Status, fmt.Sprintf("mean of %d samples %.4g (sd %.3g: %s)", len(v.Spread.Scores), v.Spread.Mean, v.Spread.StdDev, joinScores(v.Spread.Scores))
	}
	scores := make([]float64, len(votes))
	var parts []string
	passes := 0
	for i, v := range votes {
		scores[i] = *v.Score
		parts = append(parts, fmt.Sprintf("%s %.4g", v.Judge, *v.Score))
		if v.Status == results.StatusPassed {
			passes++
		}
	}
	switch how {
	case config.AggregateMedian:
		s := median(scores)
		return s, verdict(s, threshold), fmt.Sprintf("median of %d judges %.4g (%s)", len(votes), s, strings.Join(parts, ", "))
	case config.AggregateMajority:
		s := mean(scores)
		status := results.StatusFailed
		if 2*passes > len(votes) {
			status = results.StatusPassed
		}
		return s, status, fmt.Sprintf("%d of %d judges pass (majority decides; mean %.4g: %s)", passes, len(votes), s, strings.Join(parts, ", "))
	default:
		s := mean(scores)
		return s, verdict(s, threshold), fmt.Sprintf("mean of %d judges %.4g (%s)", len(votes), s, strings.Join(parts, ", "))
	}
}

func firstReason(m *metric, panel []string, reason string) string {
	who := "sample 1"
	if len(panel) > 1 {
		who = panel[0] + "'s first sample"
		if m.samples == 1 {
			who = panel[0]
		}
	}
	return who + ": " + reason
}

// spreadOf summarises one judge's samples.
func spreadOf(scores []float64, threshold float64) results.Spread {
	sp := results.Spread{Scores: scores, Mean: mean(scores)}
	if slicesAllEqual(scores) {
		// Exactly: a sum of equal floats divided back can be off by an ulp.
		sp.Mean = scores[0]
		return sp
	}
	if n := len(scores); n > 1 {
		ss := 0.0
		for _, s := range scores {
			ss += (s - sp.Mean) * (s - sp.Mean)
		}
		sp.StdDev = math.Sqrt(ss / float64(n-1))
	}
	for _, s := range scores[1:] {
		if verdict(s, threshold) != verdict(scores[0], threshold) {
			sp.Flipped = true
		}
	}
	return sp
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func joinScores(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.4g", x)
	}
	return strings.Join(parts, ", ")
}

func slicesAllEqual(xs []float64) bool {
	for _, x := range xs[1:] {
		if x != xs[0] {
			return false
		}
	}
	return true
}

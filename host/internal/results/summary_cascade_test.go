package results_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/agentanvil/anvil/host/internal/results"
)

// The summary counts a cascade's cases by the judge that decided them and
// its escalations, sums what it spent against the last judge alone, and
// counts adaptive samples per scored case; a metric with neither has
// neither.
func TestSummaryCountsCascadeAndAdaptiveSamples(t *testing.T) {
	t.Parallel()
	z := results.NewSummarizer(nil)
	usd := func(v float64) *float64 { return &v }
	score := 0.8
	add := func(id string, mr results.MetricResult) {
		mr.Metric, mr.Kind, mr.Status, mr.Score, mr.Threshold = "m", "geval", results.StatusPassed, &score, 0.5
		z.Add(&results.CaseResult{CaseID: id, Metrics: []results.MetricResult{mr, {Metric: "plain", Kind: "geval", Status: results.StatusPassed, Score: &score}}})
	}
	add("c1", results.MetricResult{DecidedBy: "cheap", StrongOnlyUSD: usd(0.010), Usage: results.JudgeUsage{USD: 0.001}, SamplesTaken: 2})
	add("c2", results.MetricResult{DecidedBy: "cheap", StrongOnlyUSD: usd(0.010), Usage: results.JudgeUsage{USD: 0.001}, SamplesTaken: 2})
	add("c3", results.MetricResult{DecidedBy: "strong", EscalatedBecause: "P(pass) 0.5 from cheap (candidates) is inside [0.15, 0.85]",
		StrongOnlyUSD: usd(0.010), Usage: results.JudgeUsage{USD: 0.011}, SamplesTaken: 5})
	// Skipped: decided by no judge, no samples taken.
	z.Add(&results.CaseResult{CaseID: "c4", Metrics: []results.MetricResult{{Metric: "m", Kind: "geval", Status: results.StatusSkipped}}})
	s := z.Summary("h", nil, nil)
	m, plain := s.Metrics[0], s.Metrics[1]
	c := m.Cascade
	if c == nil || c.Cases != 3 || c.Escalated != 1 || c.EscalationShare != 0.3333 || fmt.Sprint(c.DecidedBy) != "map[cheap:2 strong:1]" ||
		math.Abs(c.USD-0.013) > 1e-12 || math.Abs(c.StrongOnlyUSD-0.030) > 1e-12 || math.Abs(c.SavedUSD-0.017) > 1e-12 {
		t.Errorf("cascade %+v; want 3 cases, 1 escalated (.3333), cheap 2 strong 1, $0.013 against $0.030, saved $0.017", c)
	}
	if a := m.AdaptiveSamples; a == nil || *a != (results.AdaptiveSamplesSummary{Cases: 3, Mean: 3, Min: 2, Max: 5, Total: 9}) {
		t.Errorf("adaptive samples %+v; want 3 cases, mean 3, 2..5, 9 in all", a)
	}
	if plain.Cascade != nil || plain.AdaptiveSamples != nil {
		t.Errorf("a plain metric has %+v, %+v; want neither", plain.Cascade, plain.AdaptiveSamples)
	}
}

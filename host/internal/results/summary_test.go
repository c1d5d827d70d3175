package results_test

import (
	"testing"

	"github.com/agentanvil/anvil/host/internal/results"
)

// TestMetricNoCaseReachedShowsItsConfiguration: a run stopped before its
// first result (an interrupted cluster run) still shows each metric's
// kind, threshold and gate, and a gated metric is unverified, not an
// informational row with threshold 0.
func TestMetricNoCaseReachedShowsItsConfiguration(t *testing.T) {
	t.Parallel()
	z := results.NewSummarizer([]results.Configured{
		{Metric: "correctness", Kind: "geval", Threshold: 0.7, Gated: true},
		{Metric: "style", Kind: "geval", Threshold: 0.4, Gated: false},
	})
	s := z.Summary("hash", nil, nil)
	s.Decide(&results.Incomplete{Reason: "interrupted"})
	if len(s.Metrics) != 2 {
		t.Fatalf("metrics = %+v", s.Metrics)
	}
	for _, want := range []struct {
		metric, kind, verdict string
		threshold             float64
		gated                 bool
	}{
		{"correctness", "geval", results.VerdictUnverified, 0.7, true},
		{"style", "geval", results.VerdictInformational, 0.4, false},
	} {
		var got *results.MetricSummary
		for i := range s.Metrics {
			if s.Metrics[i].Metric == want.metric {
				got = &s.Metrics[i]
			}
		}
		if got == nil {
			t.Fatalf("no row for %s", want.metric)
		}
		if got.Kind != want.kind || got.Threshold != want.threshold || got.Gated != want.gated || got.Verdict != want.verdict || got.N != 0 {
			t.Errorf("%s: kind %q threshold %v gated %v verdict %q N %d; want %q %v %v %q 0",
				want.metric, got.Kind, got.Threshold, got.Gated, got.Verdict, got.N, want.kind, want.threshold, want.gated, want.verdict)
		}
	}
	if s.Passed {
		t.Error("a run that verified nothing passed")
	}
}

package results

import (
	"fmt"
	"testing"
)

// BenchmarkSummaryQuality is what a Summarizer adds per metric for 10 000
// sampled cases: the bootstrap interval of the mean, the Wilson intervals,
// the histogram and the spread.
func BenchmarkSummaryQuality(b *testing.B) {
	const n = 10000
	cases := make([]CaseResult, n)
	for i := range cases {
		s := float64(i%100) / 100
		status := StatusFailed
		if s >= 0.5 {
			status = StatusPassed
		}
		cases[i] = CaseResult{CaseID: fmt.Sprint(i), Metrics: []MetricResult{{Metric: "m", Status: status, Score: &s, Threshold: 0.5,
			Spread: &Spread{Scores: []float64{s, s, 1 - s}, Mean: s, StdDev: 0.1, Flipped: i%7 == 0}}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		z := NewSummarizer([]Configured{{Metric: "m", Kind: "k", Threshold: 0.5, Gated: true}})
		for i := range cases {
			z.Add(&cases[i])
		}
		z.Summary("h", nil, nil)
	}
}

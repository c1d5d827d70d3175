package engine

import (
	"fmt"
	"testing"
)

// BenchmarkSummaryQuality is what summarize adds per metric for 10 000
// sampled cases: the bootstrap interval of the mean, the Wilson intervals,
// the histogram and the spread.
func BenchmarkSummaryQuality(b *testing.B) {
	const n = 10000
	results := make([]MetricResult, n)
	for i := range results {
		s := float64(i%100) / 100
		results[i] = MetricResult{Metric: "m", Status: verdict(s, 0.5), Score: &s, Threshold: 0.5, caseID: fmt.Sprint(i),
			Spread: &Spread{Scores: []float64{s, s, 1 - s}, Mean: s, StdDev: 0.1, Flipped: i%7 == 0}}
	}
	b.ReportAllocs()
	for b.Loop() {
		ms := &MetricSummary{Metric: "m"}
		for _, r := range results {
			ms.add(r)
		}
		ms.finish()
	}
}

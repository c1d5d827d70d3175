package results

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

var updatePanelGolden = flag.Bool("update-panel-golden", false, "rewrite testdata/panel_summary.json")

// panelCases are n cases of a three-judge panel metric, with every shape
// addQuality tells apart: votes all scored, a vote without a score (the
// case leaves the agreement out), a judge missing and judges out of order.
func panelCases(n int) []CaseResult {
	judges := []string{"gpt", "claude", "gemini"}
	cases := make([]CaseResult, n)
	for i := range cases {
		votes := make([]PanelVote, len(judges))
		for j, name := range judges {
			s := float64((i*7+j*3)%11) / 10
			status := StatusFailed
			if s >= 0.5 {
				status = StatusPassed
			}
			votes[j] = PanelVote{Judge: name, Status: status, Score: &s}
		}
		switch {
		case i%13 == 5:
			votes[1].Score, votes[1].Status = nil, StatusError
		case i%17 == 3:
			votes = votes[:2]
		case i%19 == 7:
			votes[0], votes[2] = votes[2], votes[0]
		}
		score := *votes[0].Score
		if votes[0].Score == nil {
			score = 0
		}
		status := StatusFailed
		if score >= 0.5 {
			status = StatusPassed
		}
		cases[i] = CaseResult{CaseID: fmt.Sprint("case-", i), Metrics: []MetricResult{{
			Metric: "panel", Kind: "geval", Status: status, Score: &score, Threshold: 0.5,
			Panel: votes, Aggregate: "median",
		}}}
	}
	return cases
}

func panelSummary(cases []CaseResult) *Summary {
	z := NewSummarizer([]Configured{{Metric: "panel", Kind: "geval", Threshold: 0.5, Gated: true}})
	for i := range cases {
		z.Add(&cases[i])
	}
	return z.Summary("hash", nil, nil)
}

// TestPanelSummaryBytes holds a panel metric's summary to the bytes the
// per-case slices gave before the panel's scores were kept in one flat
// slice (testdata/panel_summary.json, written by that code).
func TestPanelSummaryBytes(t *testing.T) {
	got, err := json.Marshal(panelSummary(panelCases(500)), json.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "panel_summary.json")
	if *updatePanelGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("panel summary differs from %s:\n%s", path, got)
	}
}

// TestPanelCaseKeepsNoAllocationOfItsOwn: what the summary keeps of a
// panel case — its judges' scores and verdicts — goes into slices shared
// by all cases, not two slices of its own (which cost ≈ 3× the values).
func TestPanelCaseKeepsNoAllocationOfItsOwn(t *testing.T) {
	const n = 4096
	cases := panelCases(n)
	z := NewSummarizer([]Configured{{Metric: "panel", Kind: "geval", Threshold: 0.5}})
	for i := range n / 2 { // the slices grown past their first sizes
		z.Add(&cases[i])
	}
	i := n / 2
	allocs := testing.AllocsPerRun(n/2-1, func() {
		z.Add(&cases[i])
		i++
	})
	// The amortised growth of the shared slices and the score list is
	// well below one allocation a case; a slice of its own is two.
	if allocs >= 1 {
		t.Fatalf("%.2f allocations a panel case; want < 1", allocs)
	}
}

// BenchmarkSummaryPanel: a three-judge panel metric over 20,000 cases,
// added and summarised; B/op is mostly what the summary keeps a case.
func BenchmarkSummaryPanel(b *testing.B) {
	cases := panelCases(20000)
	b.ReportAllocs()
	for b.Loop() {
		panelSummary(cases)
	}
}

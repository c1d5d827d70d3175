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

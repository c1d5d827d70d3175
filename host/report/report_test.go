package report_test

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/engine"
	"github.com/agentanvil/anvil/host/report"
)

func ptr(v float64) *float64 { return &v }

func summary() *engine.Summary {
	return &engine.Summary{Cases: 3, Passed: false, JudgeErrors: 1, Judge: engine.JudgeUsage{Calls: 4, CacheHits: 1, InputTokens: 100, OutputTokens: 20, USD: 0.0012},
		Metrics: []engine.MetricSummary{
			{Metric: "correctness", Kind: "geval", Gated: true, Threshold: 0.6, N: 3, Scored: 2, Passed: 1, Failed: 1, Errors: 1,
				Mean: ptr(0.5), P50: ptr(0.5), PassRate: ptr(0.5), ScoreModes: map[string]int{"weighted": 1, "raw": 1}},
			{Metric: "exact", Kind: "exact_match", Gated: false, Threshold: 0.5, N: 3, Skipped: 3, SkipReason: "case has no expected_output"},
		}}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := report.Table(&b, summary()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"correctness", "0.500", "50.0%", "weighted:1,raw:1", "FAIL", "info",
		"note: exact: 3 of 3 skipped: case has no expected_output", "3 cases · 4 judge calls (1 cached) · 120 tokens · $0.0012 · judge errors 1", "FAILED"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestJUnit(t *testing.T) {
	cases := []engine.CaseResult{
		{CaseID: "a", Metrics: []engine.MetricResult{
			{Metric: "correctness", Status: engine.StatusPassed, Gated: true, Score: ptr(0.9), Threshold: 0.6},
			{Metric: "exact", Status: engine.StatusSkipped, Reason: "case has no expected_output"}}},
		{CaseID: "b", Metrics: []engine.MetricResult{
			{Metric: "correctness", Status: engine.StatusFailed, Gated: true, Score: ptr(0.1), Threshold: 0.6, Reason: "wrong"},
			{Metric: "exact", Status: engine.StatusSkipped}}},
		{CaseID: "c", Metrics: []engine.MetricResult{
			{Metric: "correctness", Status: engine.StatusError, Gated: true, ErrorClass: "judge", Error: abi.Errorf(abi.CodeJudge, "down")},
			{Metric: "exact", Status: engine.StatusSkipped}}},
	}
	var b bytes.Buffer
	if err := report.JUnit(&b, summary(), cases); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if doc.Tests != 6 || doc.Failures != 1 || doc.Errors != 1 || doc.Skipped != 3 {
		t.Fatalf("totals tests=%d failures=%d errors=%d skipped=%d", doc.Tests, doc.Failures, doc.Errors, doc.Skipped)
	}
	if doc.Suites[0].Name != "correctness" || doc.Suites[0].Cases[1].Failure == nil ||
		doc.Suites[0].Cases[1].Failure.Message != "score 0.100 below threshold 0.60" {
		t.Fatalf("suite = %+v", doc.Suites[0])
	}
}

package report_test

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/internal/testkit"
)

func ptr(v float64) *float64 { return &v }

func summary() *results.Summary {
	return &results.Summary{Cases: 3, Verdict: results.VerdictFailed, Passed: false, JudgeErrors: 1,
		Judge: results.JudgeUsage{Requests: 3, Calls: 4, Attempts: 5, CacheHits: 1, InputTokens: 100, OutputTokens: 20, USD: 0.0012},
		Metrics: []results.MetricSummary{
			{Metric: "correctness", Kind: "geval", Gated: true, Verdict: results.VerdictFailed, Threshold: 0.6, N: 3, Scored: 2, Passed: 1, Failed: 1, Errors: 1,
				Mean: ptr(0.5), P50: ptr(0.5), PassRate: ptr(0.5), ScoreModes: map[string]int{"weighted": 1, "raw": 1}},
			{Metric: "exact", Kind: "exact_match", Gated: false, Verdict: results.VerdictInformational, Threshold: 0.5, N: 3, Skipped: 3, SkipReason: "case has no expected_output"},
		}}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := report.Table(&b, summary()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"correctness", "0.500", "50.0%", "weighted:1,raw:1", "FAIL", "info",
		"note: exact: 3 of 3 skipped: case has no expected_output", "3 cases · 4 judge calls (3 requests, 1 cached, 5 HTTP attempts) · 120 tokens · $0.0012 · judge errors 1", "FAILED"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestJUnit(t *testing.T) {
	cases := []results.CaseResult{
		{CaseID: "a", Metrics: []results.MetricResult{
			{Metric: "correctness", Status: results.StatusPassed, Gated: true, Score: ptr(0.9), Threshold: 0.6},
			{Metric: "exact", Status: results.StatusSkipped, Reason: "case has no expected_output"}}},
		{CaseID: "b", Metrics: []results.MetricResult{
			{Metric: "correctness", Status: results.StatusFailed, Gated: true, Score: ptr(0.1), Threshold: 0.6, Reason: "wrong"},
			{Metric: "exact", Status: results.StatusSkipped}}},
		{CaseID: "c", Metrics: []results.MetricResult{
			{Metric: "correctness", Status: results.StatusError, Gated: true, ErrorClass: "judge", Error: abi.Errorf(abi.CodeJudge, "down")},
			{Metric: "exact", Status: results.StatusSkipped}}},
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

// TestJUnitGolden pins junit.xml's bytes, so that a change to both the
// hand-written writer and its encoding/xml reference is seen in a diff.
func TestJUnitGolden(t *testing.T) {
	s := summary()
	s.Metrics = append(s.Metrics, results.MetricSummary{Metric: "faith <\"&\">", Kind: "geval", Gated: true,
		Verdict: results.VerdictUnverified, UnverifiedReason: "scored no case:\n\tall 3 skipped ('no key')"})
	cases := []results.CaseResult{
		{CaseID: "a", Metrics: []results.MetricResult{
			{Metric: "correctness", Status: results.StatusPassed, Gated: true, Score: ptr(0.9), Threshold: 0.6, ScoreMode: "weighted", LatencyMS: 1234.5},
			{Metric: "exact", Status: results.StatusSkipped, Reason: "case has no expected_output"},
			{Metric: "faith <\"&\">", Status: results.StatusSkipped, Gated: true, Reason: "no key \xff\x01 \ufffd"}}},
		{CaseID: "b <2>", Metrics: []results.MetricResult{
			{Metric: "correctness", Status: results.StatusFailed, Gated: true, Score: ptr(0.1), Threshold: 0.6, LatencyMS: 0.25,
				Reason: "wrong:\r\n\tit says \"no\" & 'never' ]]>"},
			{Metric: "exact", Status: results.StatusFailed, Score: ptr(0), Threshold: 0.5},
			{Metric: "faith <\"&\">", Status: results.StatusSkipped, Gated: true}}},
		{CaseID: "c", Metrics: []results.MetricResult{
			{Metric: "correctness", Status: results.StatusError, Gated: true, ErrorClass: "judge", Error: abi.Errorf(abi.CodeJudge, "down"), LatencyMS: 30001},
			{Metric: "exact", Status: results.StatusPassed, Score: ptr(1), Threshold: 0.5},
			{Metric: "faith <\"&\">", Status: results.StatusSkipped, Gated: true}}},
	}
	var b bytes.Buffer
	if err := report.JUnit(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "junit.golden.xml"), b.Bytes(), *update)
}

func TestUnverifiedGateIsAnErrorInTheTableAndJUnit(t *testing.T) {
	s := &results.Summary{Cases: 2, Verdict: results.VerdictUnverified,
		Unverified: []string{"metric correctness: scored no case: all 2 skipped (no key)"},
		Judges:     []results.JudgeReport{{Name: "default", Model: "m", Source: "unavailable", Note: "no API key in $OPENAI_API_KEY"}},
		Metrics: []results.MetricSummary{{Metric: "correctness", Kind: "geval", Gated: true, Verdict: results.VerdictUnverified,
			UnverifiedReason: "scored no case: all 2 skipped (no key)", N: 2, Skipped: 2}}}
	var b bytes.Buffer
	if err := report.Table(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"judge default: no API key in $OPENAI_API_KEY", "UNVERIFIED: metric correctness: scored no case", "UNVERIFIED\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	cases := []results.CaseResult{
		{CaseID: "a", Metrics: []results.MetricResult{{Metric: "correctness", Status: results.StatusSkipped, Gated: true}}},
		{CaseID: "b", Metrics: []results.MetricResult{{Metric: "correctness", Status: results.StatusSkipped, Gated: true}}},
	}
	b.Reset()
	if err := report.JUnit(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests   int `xml:"tests,attr"`
		Errors  int `xml:"errors,attr"`
		Skipped int `xml:"skipped,attr"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// Two skips alone read as green in CI; the gate's error does not.
	if doc.Tests != 3 || doc.Errors != 1 || doc.Skipped != 2 || !strings.Contains(b.String(), "could not verify") {
		t.Fatalf("junit = %s", b.String())
	}
}

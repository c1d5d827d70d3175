package report_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/compare"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

// compareFixture is what `anvil-host compare A B --report` writes into
// run B (the HTML fixture's run): correctness significantly worse with
// c2-fail flipped pass→fail and c1-pass fail→pass, path unchanged.
func compareFixture(s *results.Summary) *compare.Report {
	return &compare.Report{
		A:     compare.RunInfo{Dir: "runs/good", RunID: "run-a", ConfigHash: s.ConfigHash, Cases: 4, Verdict: results.VerdictPassed},
		B:     compare.RunInfo{Dir: "runs/regressed", RunID: s.RunID, ConfigHash: s.ConfigHash, Cases: 4, Verdict: s.Verdict},
		Level: 0.95, Resamples: 5000, Seed: 1, Verdict: compare.VerdictRegressed, Regressed: []string{"correctness"},
		Metrics: []compare.MetricComparison{
			{MetricInfo: compare.MetricInfo{Name: "correctness", Kind: "geval", Gated: true, Threshold: 0.7}, Shared: 3,
				MeanA: ptr(0.8), MeanB: ptr(0.5667), PassRateA: ptr(1), PassRateB: ptr(0.6667),
				Difference: &stats.CI{Estimate: -0.2333, Low: -0.4, High: -0.1, Level: 0.95, N: 3, Resamples: 5000},
				Test:       &stats.TestResult{PValue: 0.25, PValueLess: 0.0312, PValueGreater: 1},
				Verdict:    compare.MetricWorse, PassToFail: 1, FailToPass: 1,
				Flips: []compare.Flip{
					{CaseID: "c2-fail", Direction: compare.PassToFail, ScoreA: 0.9, ScoreB: 0.2},
					{CaseID: "c1-pass", Direction: compare.FailToPass, ScoreA: 0.6, ScoreB: 0.9},
				}},
			{MetricInfo: compare.MetricInfo{Name: "path", Kind: "dag", Threshold: 0.5}, Shared: 1, OnlyA: 1,
				MeanA: ptr(0.2), MeanB: ptr(0.2), PassRateA: ptr(0), PassRateB: ptr(0),
				Difference: &stats.CI{Estimate: 0, Low: 0, High: 0, Level: 0.95, N: 1, Resamples: 5000},
				Test:       &stats.TestResult{PValue: 1, PValueLess: 1, PValueGreater: 1},
				Verdict:    compare.MetricNoChange},
		},
	}
}

// A compare.json of this run is drawn as the A vs B section: per metric
// the means, B − A with its interval and chart, p, verdict, and the
// flipped cases (pass→fail first) linking to their rows.
func TestReportShowsComparison(t *testing.T) {
	s, cases := qualityFixture(t)
	s.RunID = "run-b"
	dir := writeRun(t, cases)
	if err := report.WriteComparison(dir, compareFixture(s)); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	page := string(mustReadFile(t, filepath.Join(dir, "report.html")))
	section := page[strings.Index(page, `<section id="compare">`):]
	section = section[:strings.Index(section, "</section>")]
	for _, want := range []string{
		`<h2>A vs B <span class="badge failed">REGRESSED</span></h2>`,
		`<code>runs/good</code> (4 cases, run run-a)`,
		`<th scope="row">correctness</th><td>yes</td><td class="num">3</td><td class="num">0.800</td><td class="num">0.567</td><td class="num">-0.233</td><td class="num">[-0.400, -0.100]</td>`,
		`<td class="num">0.0312</td><td class="num">1</td><td class="num">1</td><td><span class="badge failed">WORSE</span></td>`,
		`<span class="badge skipped">no significant change</span>`,
		`1 cases scored only in A, 0 only in B (not compared).`,
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the compare section lacks %q", want)
		}
	}
	p2f, f2p := strings.Index(section, `pass→fail</span> <a href="#`), strings.Index(section, `fail→pass</span> <a href="#`)
	if p2f < 0 || f2p < 0 || p2f > f2p {
		t.Errorf("flips: pass→fail at %d, fail→pass at %d; want both linked, pass→fail first", p2f, f2p)
	}
	if n := strings.Count(section, `<svg class="chart interval difference"`); n != 2 {
		t.Errorf("%d difference charts; want one per metric (2)", n)
	}
}

// A compare.json of another run (a rerun into the directory after
// compare) is not shown as this run's comparison; the page says why.
// One that does not decode is a note too.
func TestReportComparisonOfAnotherRunIsANote(t *testing.T) {
	for _, tc := range []struct {
		name, content, note string
	}{
		{"another run", "", `compare.json is not shown: it compares run &#34;run-old&#34; as B, not this run &#34;run-b&#34;`},
		{"not json", "{", "compare.json is not shown: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cases := qualityFixture(t)
			s.RunID = "run-b"
			dir := writeRun(t, cases)
			rep := compareFixture(s)
			rep.B.RunID = "run-old"
			if err := report.WriteComparison(dir, rep); err != nil {
				t.Fatal(err)
			}
			if tc.content != "" {
				os.WriteFile(filepath.Join(dir, report.CompareFileName), []byte(tc.content), 0o644)
			}
			if err := report.Write(dir, s); err != nil {
				t.Fatal(err)
			}
			page := string(mustReadFile(t, filepath.Join(dir, "report.html")))
			if strings.Contains(page, `<section id="compare">`) || !strings.Contains(page, tc.note) {
				t.Errorf("page shows the comparison or lacks the note %q", tc.note)
			}
		})
	}
}

// The section stays bounded: a metric with more flips than
// MaxCompareFlips lists that many and counts the rest.
func TestReportComparisonBoundsFlips(t *testing.T) {
	s, cases := qualityFixture(t)
	dir := writeRun(t, cases)
	rep := compareFixture(s)
	var flips []compare.Flip
	for i := range report.MaxCompareFlips + 70 {
		flips = append(flips, compare.Flip{CaseID: fmt.Sprintf("gone-%d", i), Direction: compare.PassToFail, ScoreA: 0.9, ScoreB: 0.1})
	}
	rep.Metrics[0].Flips = flips
	if err := report.WriteComparison(dir, rep); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	page := string(mustReadFile(t, filepath.Join(dir, "report.html")))
	if n := strings.Count(page, `<span class="badge failed">pass→fail</span> gone-`); n != report.MaxCompareFlips || !strings.Contains(page, "and 70 more flipped cases in compare.json") {
		t.Errorf("%d flips listed; want %d and the rest counted", n, report.MaxCompareFlips)
	}
}

package report_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
)

// scaleRun is a run of n cases, every failing-th one failing its gated
// metric, each with an input, an output and a reason of its own (words a
// search finds in one case only) past the table's preview.
func scaleRun(n, failing int) (*results.Summary, []results.CaseResult) {
	s := &results.Summary{Cases: n, Verdict: results.VerdictFailed, ConfigHash: "sha256:scale",
		Metrics: []results.MetricSummary{{Metric: "correctness", Kind: "geval", Gated: true, Verdict: results.VerdictFailed, N: n, Threshold: 0.5}}}
	pad := strings.Repeat("filler words to push the end past the preview ", 8)
	cases := make([]results.CaseResult, n)
	for i := range cases {
		id := fmt.Sprintf("case-%05d", i)
		st, score := results.StatusPassed, 0.9
		if failing > 0 && i%failing == 0 {
			st, score = results.StatusFailed, 0.1
		}
		cases[i] = results.CaseResult{CaseID: id, ConfigHash: "sha256:scale",
			Case: &abi.TestCase{ID: id, Input: fmt.Sprintf("question %d about %s", i, "topic"),
				ActualOutput: pad + fmt.Sprintf("answer-marker-%05d", i)},
			Metrics: []results.MetricResult{{Metric: "correctness", Kind: "geval", Status: st, Gated: true, Score: &score, Threshold: 0.5,
				Reason: pad + fmt.Sprintf("reason-marker-%05d", i), LatencyMS: 1500, CompileWaitMS: 1200,
				Usage: results.JudgeUsage{Calls: 1, InputTokens: 100, OutputTokens: 10, USD: 0.0123}}}}
	}
	return s, cases
}

// writeScaleReport builds report.html of the run as `anvil-host run`
// does (report.Builder, given each case as it is written).
func writeScaleReport(t testing.TB, s *results.Summary, cases []results.CaseResult) string {
	t.Helper()
	dir := t.TempDir()
	b := report.NewBuilder(dir)
	defer b.Close()
	for i := range cases {
		b.Add(&cases[i])
	}
	if err := b.Write(s, ""); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "report.html")
}

// A run of more cases than the page holds: the page says how many it
// holds of how many, how many of each sort it left out, and where they
// all are; the failing ones are all on it.
func TestReportSaysWhatWasLeftOut(t *testing.T) {
	tests := []struct {
		name               string
		n, failing         int
		want               string
		wantFailedOnPage   int
		wantNoLeftOutBlock bool
	}{
		{name: "2,100 cases, 1 in 50 failing", n: 2100, failing: 50,
			want:             "This page holds 1000 of the run's 2100 cases: every case with a failure, error or skip comes first, then passing cases, up to 1000. Left out: 1100 passing case(s).",
			wantFailedOnPage: 42},
		{name: "more failing cases than the page holds", n: 2400, failing: 2,
			want:             "This page holds 1000 of the run's 2400 cases: every case with a failure, error or skip comes first, then passing cases, up to 1000. Left out: 1200 passing case(s) and 200 with a failure, error or skip.",
			wantFailedOnPage: 1000},
		{name: "all on the page", n: 1000, failing: 50, wantNoLeftOutBlock: true, wantFailedOnPage: 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, cases := scaleRun(tc.n, tc.failing)
			page := string(mustReadFile(t, writeScaleReport(t, s, cases)))
			if tc.wantNoLeftOutBlock {
				if strings.Contains(page, `id="left-out"`) {
					t.Error("a page holding every case says some were left out")
				}
			} else {
				if !strings.Contains(page, tc.want) {
					t.Errorf("the page does not say %q:\n%s", tc.want, regexp.MustCompile(`(?s)<p class="left-out".*?</p>`).FindString(page))
				}
				if !strings.Contains(page, `<a href="#left-out">1000 on this page</a>`) {
					t.Error("the header's case count does not link to what was left out")
				}
			}
			if got := strings.Count(page, `data-status="failed"`) / 2; got != tc.wantFailedOnPage { // a row and its details row
				t.Errorf("%d failed cases on the page; want %d", got, tc.wantFailedOnPage)
			}
		})
	}
}

// The Cost column: the judge's calls, tokens and dollars, the metric's
// own time, and apart from it the wait for the plugin's compile.
func TestHTMLCostColumn(t *testing.T) {
	s, cases := scaleRun(1, 0)
	var b bytes.Buffer
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	cell := regexp.MustCompile(`<td class="num cost">.*?</td>`).FindString(b.String())
	for _, want := range []string{"1 call<br>110 tok", `<span class="usd">$0.0123</span>`, `title="the metric's own time">300 ms</small>`, `+ 1.2 s compile wait</small>`} {
		if !strings.Contains(cell, want) {
			t.Errorf("cost cell %q lacks %q", cell, want)
		}
	}
	// No wait, no judge: neither is mentioned.
	cases[0].Metrics[0].CompileWaitMS, cases[0].Metrics[0].Usage = 0, results.JudgeUsage{}
	b.Reset()
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	cell = regexp.MustCompile(`<td class="num cost">.*?</td>`).FindString(b.String())
	if strings.Contains(cell, "compile wait") || strings.Contains(cell, "$") || !strings.Contains(cell, "1.5 s") {
		t.Errorf("cost cell without wait or judge: %q", cell)
	}
}

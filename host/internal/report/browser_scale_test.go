package report_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/calibrate"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/internal/testkit"
)

// The search box of a report of 2,100 cases (1,000 on the page) in a real
// browser: it finds a case by words of its id, its input, the end of its
// output, of its reason and of its error message (past the table's
// preview), with the status filter too, and finds nothing of a case the
// page left out.
func TestReportSearchInARealBrowser(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	ctx := browser(t)
	s, cases := scaleRun(2100, 50)
	m := &cases[5].Metrics[0]
	m.Status, m.Score, m.Reason = results.StatusError, nil, ""
	m.Error = &abi.Error{Code: abi.CodeJudge, Message: "judge returned 503 " + strings.Repeat("and more ", 40) + "error-marker-00005"}
	page := writeScaleReport(t, s, cases)
	watch := watchConsole(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL(page))); err != nil {
		t.Fatal(err)
	}
	type shown struct {
		Cases int
		IDs   []string
		Count string
	}
	search := func(q, status string) shown {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[shown](fmt.Sprintf(`(() => {
			const st = document.getElementById("f-status"); st.value = %q; st.dispatchEvent(new Event("change"));
			const s = document.getElementById("f-search"); s.value = %q; s.dispatchEvent(new Event("input"));
			const vis = [...document.querySelectorAll("tbody.case")].filter(g => !g.hidden);
			return {Cases: vis.length, IDs: vis.slice(0, 3).map(g => g.querySelector(".cid").textContent),
				Count: document.getElementById("f-count").textContent};
		})()`, status, q)))
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		return got
	}
	tests := []struct {
		q, status string
		cases     int
		first     string
		count     string
	}{
		{q: "", status: "all", cases: 1000, count: "1000 of 1000 rows · 1000 of 1000 cases"},
		{q: "case-00100", status: "all", cases: 1, first: "case-00100"},
		{q: "answer-marker-00007", status: "all", cases: 1, first: "case-00007"},  // the output's end, past the preview
		{q: "REASON-marker-00150", status: "all", cases: 1, first: "case-00150"},  // the reason's end, any case
		{q: "error-marker-00005", status: "error", cases: 1, first: "case-00005"}, // an error's message, past its preview
		{q: "777 about question", status: "all", cases: 1, first: "case-00777"},   // words of the input, in any order
		{q: "topic", status: "failed", cases: 42, count: "42 of 1000 rows · 42 of 1000 cases"},
		{q: "answer-marker-02099", status: "all", cases: 0, count: "0 of 1000 rows · 0 of 1000 cases"}, // left out of the page
	}
	for _, tc := range tests {
		got := search(tc.q, tc.status)
		if got.Cases != tc.cases || (tc.first != "" && (len(got.IDs) == 0 || got.IDs[0] != tc.first)) || (tc.count != "" && got.Count != tc.count) {
			t.Errorf("search %q (status %s): %d cases %v, %q; want %d, first %q, %q", tc.q, tc.status, got.Cases, got.IDs, got.Count, tc.cases, tc.first, tc.count)
		}
	}
	if problems := watch.problems(t, ctx); len(problems) > 0 {
		t.Errorf("report.html wrote to the console:\n%s", strings.Join(problems, "\n"))
	}
}

// The quality cards' tables (a DAG's per-node sample split, the
// calibration coefficients, a panel's pairs) stay inside their cards at a
// desktop's and a phone's width: a table wider than its card scrolls in
// it, and nothing makes the page scroll sideways.
func TestQualityCardsFitInARealBrowser(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	s, cases := qualityFixture(t)
	long := "a_node_identifier_with_no_place_to_break_it_at_all"
	for i := range s.Metrics {
		if s.Metrics[i].Metric == "path" {
			s.Metrics[i].DAGSamples = &results.DAGSampleSummary{Cases: 1, PathDiffers: 1, PathDifferShare: 1, PathDifferCases: []string{"c4-dag"},
				Nodes: []results.NodeSampleSummary{{Node: long, Cases: 1, Differs: 1,
					Verdicts: []results.VerdictCount{{Verdict: "a_verdict_label_as_long_as_a_judge_may_write_it", Count: 2}, {Verdict: "true", Count: 1}}}}}
		}
	}
	dir := writeRun(t, cases)
	if err := calibrate.WriteFile(dir, calibrationFixture()); err != nil {
		t.Fatal(err)
	}
	b := report.NewBuilder(dir)
	defer b.Close()
	if err := results.EachIn(dir, b); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(s, ""); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")

	type card struct {
		ID                       string
		ScrollWidth, ClientWidth int
		Tables, Wrapped          int
	}
	type layout struct {
		Cards               []card
		DocWidth, ViewWidth int
		DAGSamples, Calib   bool
	}
	for _, width := range []int64{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			ctx := browser(t)
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(fileURL(page))); err != nil {
				t.Fatal(err)
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[layout](`(() => {
				const cards = [...document.querySelectorAll(".card")].map(c => {
					const tables = [...c.querySelectorAll("table")];
					return {ID: c.id, ScrollWidth: c.scrollWidth, ClientWidth: c.clientWidth, Tables: tables.length,
						Wrapped: tables.filter(t => { const s = t.closest(".scroll"); return s && c.contains(s) && s.clientWidth <= c.clientWidth; }).length};
				});
				return {Cards: cards, DocWidth: document.documentElement.scrollWidth, ViewWidth: window.innerWidth,
					DAGSamples: !!document.querySelector(".card .dag-samples table"),
					Calib: [...document.querySelectorAll(".card td")].some(td => td.textContent.startsWith("Spearman"))};
			})()`))
			if err != nil {
				t.Fatal(err)
			}
			if !got.DAGSamples || !got.Calib || len(got.Cards) == 0 {
				t.Fatalf("the page lacks the tables under test: %+v", got)
			}
			for _, c := range got.Cards {
				if c.ScrollWidth > c.ClientWidth {
					t.Errorf("card %s overflows at %dpx: its content is %dpx wide in %dpx", c.ID, width, c.ScrollWidth, c.ClientWidth)
				}
				if c.Wrapped != c.Tables {
					t.Errorf("card %s: %d of its %d tables scroll inside it", c.ID, c.Wrapped, c.Tables)
				}
			}
			if got.DocWidth > got.ViewWidth {
				t.Errorf("the page is %dpx wide in a %dpx window: it scrolls sideways", got.DocWidth, got.ViewWidth)
			}
		})
	}
}

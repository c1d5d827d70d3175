package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/internal/testkit"
)

// The A vs B view and a sampled DAG's notes in a real browser, on the page
// `compare --report` leaves in run B: the section is laid out with its
// difference charts, its flip links lead to rows of the page, the nav
// links to it, the notes under the DAG's nodes are drawn in the page's
// note style, and nothing is written to the console.
func TestCompareViewInARealBrowser(t *testing.T) {
	testkit.Long(t, "minutes, or external programs")
	ctx := browser(t)
	s, cases := qualityFixture(t)
	s.RunID = "run-b"
	for ci := range cases {
		for mi := range cases[ci].Metrics {
			if mr := &cases[ci].Metrics[mi]; mr.Metric == "path" && mr.Details != nil {
				mr.DAGSpread = &results.DAGSpread{Scorings: 3, Paths: 2, PathDiffers: true, Nodes: []results.NodeSpread{
					{Node: "has_answer", Ran: 3, Verdicts: []results.VerdictCount{{Verdict: "false", Count: 2}, {Verdict: "true", Count: 1}}, Differs: true}}}
			}
		}
	}
	dir := writeRun(t, cases)
	if err := report.WriteComparison(dir, compareFixture(s)); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	watch := watchConsole(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL(filepath.Join(dir, "report.html")))); err != nil {
		t.Fatal(err)
	}
	type view struct {
		SectionW, SectionH, DiffCharts, ChartW, Rows int
		Verdicts, Flips                              []string
		FlipTargets, NavLinks                        int
		Notes                                        []string
		NoteSize                                     string
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[view](`(() => {
		const sec = document.getElementById("compare");
		for (const d of document.querySelectorAll("tr.more")) { d.hidden = false; }
		const r = sec ? sec.getBoundingClientRect() : {width: 0, height: 0};
		const chart = document.querySelector("#compare svg.chart.difference");
		const links = [...document.querySelectorAll("#compare ul.flips a")];
		const note = document.querySelector("svg.dag-svg text.dag-note");
		return {
			SectionW: Math.round(r.width), SectionH: Math.round(r.height),
			DiffCharts: document.querySelectorAll("#compare svg.chart.difference").length,
			ChartW: chart ? Math.round(chart.getBoundingClientRect().width) : 0,
			Rows: document.querySelectorAll("#compare table.compare th[scope=row]").length,
			Verdicts: [...document.querySelectorAll("#compare table.compare tr:has(th[scope=row]) td .badge")].map(b => b.textContent),
			Flips: [...document.querySelectorAll("#compare ul.flips li")].map(li => li.textContent.trim()),
			FlipTargets: links.filter(a => document.getElementById(a.getAttribute("href").slice(1))).length,
			NavLinks: document.querySelectorAll('nav.toc a[href="#compare"]').length,
			Notes: [...document.querySelectorAll("svg.dag-svg text.dag-note")].map(n => n.textContent),
			NoteSize: note ? getComputedStyle(note).fontSize : "",
		};
	})()`))
	if err != nil {
		t.Fatalf("inspect the page: %v", err)
	}
	if got.SectionW < 600 || got.SectionH < 100 || got.DiffCharts != 2 || got.ChartW < 200 || got.Rows != 2 || got.NavLinks != 1 {
		t.Errorf("compare view laid out as %+v; want a section with 2 rows and 2 difference charts, linked from the nav", got)
	}
	if strings.Join(got.Verdicts, "|") != "WORSE|no significant change" {
		t.Errorf("verdicts %q", got.Verdicts)
	}
	if len(got.Flips) != 2 || !strings.HasPrefix(got.Flips[0], "pass→fail c2-fail 0.900 → 0.200") || !strings.HasPrefix(got.Flips[1], "fail→pass c1-pass") || got.FlipTargets != 2 {
		t.Errorf("flips %q with %d links resolving; want pass→fail first, both linking to rows", got.Flips, got.FlipTargets)
	}
	if strings.Join(got.Notes, "|") != "false 2/3 · true 1/3" || got.NoteSize != "10px" {
		t.Errorf("dag notes %q (font size %q); want the binary node's split in the note style", got.Notes, got.NoteSize)
	}
	if d := os.Getenv("ANVIL_SCREENSHOT_DIR"); d != "" {
		if shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(d, "compare.png"), shot, 0o644)
		}
	}
	if problems := watch.problems(t, ctx); len(problems) > 0 {
		t.Errorf("report.html wrote to the console:\n%s", strings.Join(problems, "\n"))
	}
}

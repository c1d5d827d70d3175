package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/calibrate"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

// pathOutline is the graph of fixtureDAG's metric "path": gate (a code
// gate) → extract (task) → has_answer (binary) with score leaves, and a
// tone node the case never reaches.
func pathOutline() dag.Outline {
	return dag.Outline{Metric: "path",
		Nodes: []dag.OutlineNode{
			{ID: "n0", Node: "gate", Kind: "json_valid", Shape: dag.ShapeCode, Label: "gate"},
			{ID: "n0.0", Node: "gate", Verdict: "false", Shape: dag.ShapeScore, Label: "0/10"},
			{ID: "n1", Node: "extract", Kind: "task", Shape: dag.ShapeTask, Label: "extract"},
			{ID: "n2", Node: "has_answer", Kind: "binary", Shape: dag.ShapeDecision, Label: "has_answer"},
			{ID: "n2.0", Node: "has_answer", Verdict: "false", Shape: dag.ShapeScore, Label: "2/10"},
			{ID: "n3", Node: "tone", Kind: "choice", Shape: dag.ShapeDecision, Label: "tone <&> \"x\""},
			{ID: "n3.0", Node: "tone", Verdict: "formal", Shape: dag.ShapeScore, Label: "10/10"},
		},
		Edges: []dag.OutlineEdge{
			{From: "n0", To: "n0.0", Label: "false", Verdict: "false"},
			{From: "n0", To: "n1", Label: "true", Verdict: "true"},
			{From: "n1", To: "n2", Data: true, Label: "Claims"},
			{From: "n2", To: "n2.0", Label: "false", Verdict: "false"},
			{From: "n2", To: "n3", Label: "true", Verdict: "true"},
			{From: "n3", To: "n3.0", Label: "formal", Verdict: "formal"},
		}}
}

// qualityFixture is the HTML fixture with what a run with samples, a
// panel and a dag writes into its summary.
func qualityFixture(t *testing.T) (*results.Summary, []results.CaseResult) {
	s, cases := fixture(t)
	s.Graphs = []dag.Outline{pathOutline()}
	m := &s.Metrics[0]
	m.Histogram = []int{0, 0, 1, 0, 0, 0, 0, 0, 1, 1}
	m.MeanCI = &stats.CI{Estimate: 0.6333, Low: 0.2, High: 0.9, Level: 0.95, N: 3, Resamples: 5000}
	m.PassRateCI = &stats.CI{Estimate: 0.6667, Low: 0.2077, High: 0.9385, Level: 0.95, N: 3}
	m.Sampled, m.FlipShare, m.MeanSampleSD, m.MaxSampleSD = 3, ptr(0.3333), ptr(0.12), ptr(0.3)
	m.FlipShareCI = &stats.CI{Estimate: 0.3333, Low: 0.0615, High: 0.7923, Level: 0.95, N: 3}
	m.FlippedCases = []string{"c2-fail"}
	m.Panel = &results.PanelAgreement{Judges: []string{"gpt", "claude", "local"}, Aggregate: "median", Cases: 3,
		MeanAbsDiff: ptr(0.4), VerdictAgreement: ptr(0.3333), JudgeMeans: []float64{0.8, 0.6, 0.2}, Alpha: ptr(-0.3333),
		Pairs: []results.PairAgreement{{A: "gpt", B: "claude", MeanAbsDiff: 0.2}}}
	return s, cases
}

func renderQuality(t *testing.T) string {
	t.Helper()
	s, cases := qualityFixture(t)
	var b bytes.Buffer
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// svgs returns every inline <svg> of the page but the page's marker
// definitions.
func svgs(page string) []string {
	all := regexp.MustCompile(`(?s)<svg class="[^"]*".*?</svg>`).FindAllString(page, -1)
	return all
}

// Every chart and graph is well-formed SVG (each parses as XML), and the
// page stays free of anything external.
func TestQualityChartsAreWellFormedSVG(t *testing.T) {
	page := renderQuality(t)
	found := map[string]int{}
	for _, svg := range svgs(page) {
		cls := regexp.MustCompile(`^<svg class="([^"]*)"`).FindStringSubmatch(svg)[1]
		found[cls]++
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := dec.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Errorf("%s does not parse: %v\n%s", cls, err, svg)
				}
				break
			}
		}
	}
	// One histogram; mean, pass rate and flip share intervals; the panel's
	// bars; the one dag case's graph.
	want := map[string]int{"chart histogram": 1, "chart interval": 3, "chart bars": 1, "dag-svg": 1}
	for cls, n := range want {
		if found[cls] != n {
			t.Errorf("%d <svg class=%q>; want %d (found %v)", found[cls], cls, n, found)
		}
	}
	for _, bad := range []string{"http://", "https://", "<link", "@import", "src="} {
		if strings.Contains(page, bad) {
			t.Errorf("page loads or links something external: contains %q", bad)
		}
	}
}

func TestQualityCardNumbers(t *testing.T) {
	page := renderQuality(t)
	for _, want := range []string{
		`<a href="#quality">Quality</a>`,
		"<b>Mean</b> 0.633 [0.200, 0.900]",
		"<b>Pass rate</b> 66.7% [20.8%, 93.8%]",
		"3 cases sampled · sd mean 0.120, max 0.300 · verdict flips on 1 (33.3% [6.2%, 79.2%])",
		`Flipping cases: <a href="#case-2">c2-fail</a>`,
		"<b>Panel</b> gpt, claude, local · median · 3 cases · mean |diff| 0.400 · verdicts agree 33.3% · Krippendorff α -0.333",
		"<td>gpt · claude</td><td class=\"num\">0.200</td>",
		// histogram bars: .2-.3 fails at threshold .6, .8-.9 and .9-1 pass
		`<rect class="bar fail" x="`, `<title>0.2–0.3: 1 case(s)</title>`, `<title>0.9–1.0: 1 case(s)</title>`,
		`<title>threshold 0.6</title>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<rect class="bar pass"`); n != 4+2 { // the 4 histogram bins from .6 (2 empty), gpt and claude
		t.Errorf("%d pass bars; want 6", n)
	}
}

// The dag case's graph is drawn whole, with the path it took: gate and
// extract and has_answer ran, the false leaf of has_answer fired; tone
// and gate's false leaf did not; the edges gate→extract (true),
// extract→has_answer (data) and has_answer→2/10 (false) were taken.
func TestDAGDrawnWithThePath(t *testing.T) {
	page := renderQuality(t)
	svg := regexp.MustCompile(`(?s)<svg class="dag-svg".*?</svg>`).FindString(page)
	if svg == "" {
		t.Fatal("no dag drawing")
	}
	classOf := map[string]string{}
	for _, m := range regexp.MustCompile(`<g class="dag-node ([^"]*)" data-node="([^"]*)">`).FindAllStringSubmatch(svg, -1) {
		classOf[m[2]] = m[1]
	}
	want := map[string]string{"n0": "code taken", "n0.0": "score skipped", "n1": "task taken", "n2": "decision taken",
		"n2.0": "score taken", "n3": "decision skipped", "n3.0": "score skipped"}
	for id, cls := range want {
		if classOf[id] != cls {
			t.Errorf("node %s class %q; want %q", id, classOf[id], cls)
		}
	}
	edges := regexp.MustCompile(`<path class="(dag-edge[^"]*)"`).FindAllStringSubmatch(svg, -1)
	var got []string
	for _, e := range edges {
		got = append(got, e[1])
	}
	if strings.Join(got, "|") != "dag-edge|dag-edge taken|dag-edge data taken|dag-edge taken|dag-edge|dag-edge" {
		t.Errorf("edge classes %v", got)
	}
	if !strings.Contains(svg, "tone &lt;&amp;&gt; &#34;x&#34;") || strings.Contains(svg, `tone <&>`) {
		t.Error("a node label is not escaped in the drawing")
	}
	if strings.Contains(page, "<summary>Mermaid flowchart (source)</summary>") {
		t.Error("the drawn graph still comes with collapsed Mermaid source")
	}
	if !strings.Contains(page, "anvil-host dag render path --results results.jsonl --case c4-dag") {
		t.Error("the page no longer says how to get the Mermaid source")
	}
}

// A graph the layout refuses (here a cycle, which only a tampered summary
// has) is not drawn; the page says why and keeps the Mermaid source.
func TestDAGNotDrawnSaysWhy(t *testing.T) {
	s, cases := qualityFixture(t)
	s.Graphs[0].Edges = append(s.Graphs[0].Edges, dag.OutlineEdge{From: "n2", To: "n1", Verdict: "loop", Label: "loop"})
	var b bytes.Buffer
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, `<svg class="dag-svg"`) || !strings.Contains(page, "the graph is not drawn: the graph has a cycle") ||
		!strings.Contains(page, "<summary>Mermaid flowchart (source)</summary>") {
		t.Error("an undrawable graph is neither explained nor replaced by its Mermaid source")
	}
}

// writeRun lays out an output directory as a run leaves it: results.jsonl
// (each line without its case) and cases/ (indented, with it), for
// report.Write.
func writeRun(t *testing.T, cases []results.CaseResult) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	for _, c := range cases {
		full, _ := json.MarshalIndent(c, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "cases", c.CaseID+".json"), full, 0o644); err != nil {
			t.Fatal(err)
		}
		c.Case = nil
		line, _ := json.Marshal(c)
		lines.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// calibrationFixture is what `anvil-host calibrate` writes for the
// fixture's correctness metric: three paired cases on a 1–5 human scale.
func calibrationFixture() *calibrate.Report {
	h := func(v float64) *float64 { return &v }
	return &calibrate.Report{Level: 0.95, Metrics: []calibrate.MetricCalibration{{
		Metric: "correctness", Kind: "geval", Threshold: 0.6, Labels: 6, Raters: 2, LabelledCases: 3, Paired: 3,
		Points: []calibrate.Point{
			{CaseID: "c1-pass", Judge: 0.9, JudgePass: true, Human: h(4.5), Ratings: 2},
			{CaseID: "c2-fail", Judge: 0.2, Human: h(1.5), Ratings: 2},
			{CaseID: "c4-dag", Judge: 0.8, JudgePass: true, Human: h(4), Ratings: 2},
		},
		Agreement: map[string]stats.CI{calibrate.Spearman: {Estimate: 1, Low: 1, High: 1, Level: 0.95, N: 3}},
		Undefined: map[string]string{calibrate.CohenKappa: "no paired case has a human pass/fail"},
	}}}
}

// With calibration.json beside the results, the metric's card plots the
// judge against the humans and lists the agreement statistics; one that
// does not parse is a note, and the report is still written.
func TestReportShowsCalibration(t *testing.T) {
	s, cases := qualityFixture(t)
	dir := writeRun(t, cases)
	if err := calibrate.WriteFile(dir, calibrationFixture()); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	page := string(mustReadFile(t, filepath.Join(dir, "report.html")))
	scatter := regexp.MustCompile(`(?s)<svg class="chart scatter".*?</svg>`).FindString(page)
	if strings.Count(scatter, `<circle class="point"`) != 3 || !strings.Contains(scatter, "<title>human 1.5, judge 0.2</title>") {
		t.Errorf("scatter = %s; want the 3 paired cases", scatter)
	}
	for _, want := range []string{"<b>Agreement with human labels</b> · 3 cases paired · 2 rater(s)",
		"<td>Spearman ρ</td><td class=\"num\">&#43;1.000 [&#43;1.000, &#43;1.000] · n 3</td>",
		"<td>Cohen κ (pass/fail)</td><td class=\"num\">undefined: no paired case has a human pass/fail</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "calibration.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir, s); err != nil {
		t.Fatalf("an unreadable calibration.json failed the report: %v", err)
	}
	page = string(mustReadFile(t, filepath.Join(dir, "report.html")))
	if strings.Contains(page, `class="chart scatter"`) || !strings.Contains(page, "calibration.json is not shown: ") {
		t.Error("an unreadable calibration.json is neither skipped nor explained")
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

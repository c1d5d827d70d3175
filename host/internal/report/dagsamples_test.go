package report_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
)

// A dag case walked three times (samples: 3) has its nodes and leaves
// annotated with how the walks split, and the metric's card lists the
// nodes whose verdict differed and the cases whose path differed.
func TestDAGSampleSplitDrawn(t *testing.T) {
	s, cases := qualityFixture(t)
	for ci := range cases {
		for mi := range cases[ci].Metrics {
			if mr := &cases[ci].Metrics[mi]; mr.Metric == "path" && mr.Details != nil {
				mr.DAGSpread = &results.DAGSpread{Scorings: 3, Paths: 2, PathDiffers: true,
					Nodes: []results.NodeSpread{
						{Node: "gate", Ran: 3, Verdicts: []results.VerdictCount{{Verdict: "true", Count: 3}}},
						{Node: "extract", Ran: 3},
						{Node: "has_answer", Ran: 3, Verdicts: []results.VerdictCount{{Verdict: "false", Count: 2}, {Verdict: "true", Count: 1}}, Differs: true},
						{Node: "tone", Ran: 1, Verdicts: []results.VerdictCount{{Verdict: "formal", Count: 1}}},
					},
					Leaves: []results.LeafSpread{{Node: "has_answer", Verdict: "false", Fired: 2, Mean: 0.2}, {Node: "tone", Verdict: "formal", Fired: 1, Mean: 1}}}
			}
		}
	}
	for i := range s.Metrics {
		if s.Metrics[i].Metric == "path" {
			s.Metrics[i].DAGSamples = &results.DAGSampleSummary{Cases: 1, PathDiffers: 1, PathDifferShare: 1, PathDifferCases: []string{"c4-dag"},
				Nodes: []results.NodeSampleSummary{{Node: "has_answer", Cases: 1, Differs: 1, Verdicts: []results.VerdictCount{{Verdict: "false", Count: 2}, {Verdict: "true", Count: 1}}}}}
		}
	}
	var b bytes.Buffer
	if err := report.HTML(&b, s, cases); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	svg := regexp.MustCompile(`(?s)<svg class="dag-svg".*?</svg>`).FindString(page)
	notes := map[string]string{}
	for _, m := range regexp.MustCompile(`<g class="dag-node [^"]*" data-node="([^"]*)">.*?(?:<text class="dag-note"[^>]*>([^<]*)</text>)?</g>`).FindAllStringSubmatch(svg, -1) {
		notes[m[1]] = m[2]
	}
	want := map[string]string{"n0": "true 3/3", "n0.0": "", "n1": "ran 3/3", "n2": "false 2/3 · true 1/3",
		"n2.0": "fired 2/3", "n3": "formal 1/3", "n3.0": "fired 1/3"}
	for id, note := range want {
		if notes[id] != note {
			t.Errorf("node %s note %q; want %q", id, notes[id], note)
		}
	}
	for _, s := range []string{
		"the path differs between a case's walks on 1 of 1 cases (100.0%)",
		"<td>has_answer</td><td class=\"num\">1</td><td class=\"num\">1</td><td>false 2 · true 1</td>",
		"The case was scored 3 times: the path drawn is the first walk's",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
}

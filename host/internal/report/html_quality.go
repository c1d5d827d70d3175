package report

import (
	"fmt"

	"github.com/agentanvil/anvil/host/internal/compare"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/results"
)

// pageExtras are what report.html shows beyond the summary and the
// cases, read from other files of the output directory.
type pageExtras struct {
	// calibration is per metric, from calibration.json; note says why a
	// calibration.json present was not shown.
	calibration map[string]*calibrationView
	note        string
	// comparison is this run against another, from compare.json
	// (comparison.go); compareNote says why one present was not shown.
	comparison  *compare.Report
	compareNote string
	// config is the run's config file as a path from the output
	// directory, for the dag render commands; "" when not known.
	config string
	// leftOut is the run's cases the page was not given (the Builder's
	// bound); nil when none were left out.
	leftOut *leftOut
}

// addQuality adds what the page shows of judgement quality: each metric's
// charts, and each dag row's graph drawn with the path its case took.
func addQuality(p *page, s *results.Summary, extras pageExtras) {
	anchors := map[string]string{}
	for _, g := range p.Groups {
		if _, dup := anchors[g.ID]; !dup {
			anchors[g.ID] = g.Anchor
		}
	}
	p.Quality = qualityCards(s, anchors, extras.calibration)
	if extras.note != "" {
		p.Notes = append(p.Notes, extras.note)
	}
	if extras.comparison != nil {
		p.Compare = comparisonView(extras.comparison, anchors)
	}
	if extras.compareNote != "" {
		p.Notes = append(p.Notes, extras.compareNote)
	}
	drawDAGs(p, s.Graphs, MaxDAGDrawingBytes)
}

// MaxDAGDrawingBytes bounds the DAG drawings of one page: rows are drawn
// in page order (failures first) until the drawings reach it; later rows
// keep their path list and the Mermaid source, and say why.
const MaxDAGDrawingBytes = 8 << 20

// drawDAGs draws the graph of every dag row whose metric the summary
// outlines, up to budget bytes of drawings; each metric's layout is
// computed once.
func drawDAGs(p *page, graphs []dag.Outline, budget int) {
	drawn := 0
	layouts := map[string]*layout{}
	problems := map[string]string{}
	for i := range graphs {
		l, err := layoutOutline(&graphs[i])
		if err != nil {
			problems[graphs[i].Metric] = "the graph is not drawn: " + err.Error()
			continue
		}
		layouts[graphs[i].Metric] = l
	}
	for gi := range p.Groups {
		for ri := range p.Groups[gi].Rows {
			row := &p.Groups[gi].Rows[ri]
			if row.DAG == nil {
				continue
			}
			l := layouts[row.Metric]
			if l == nil {
				row.DAG.SVGNote = problems[row.Metric]
				continue
			}
			marks := marksOf(l.outline, row.DAG.res)
			marks.notes = spreadNotes(l.outline, row.DAG.spread)
			if marks.notes != nil {
				row.DAG.Walks = row.DAG.spread.Scorings
			}
			svg := l.svg("decision graph of "+row.Metric+" with the path of case "+p.Groups[gi].ID, marks)
			if drawn+len(svg) > budget {
				row.DAG.SVGNote = fmt.Sprintf("not drawn: the page already holds %d KiB of drawings (failing cases are drawn first)", drawn>>10)
				continue
			}
			drawn += len(svg)
			row.DAG.SVG = svg
		}
	}
}

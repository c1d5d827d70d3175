package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/dag"
)

func outline() dag.Outline {
	return dag.Outline{Metric: "m",
		Nodes: []dag.OutlineNode{
			{ID: "n0", Node: "a", Kind: "binary", Shape: dag.ShapeDecision, Label: "a"},
			{ID: "n0.0", Node: "a", Verdict: "false", Shape: dag.ShapeScore, Label: "0/10"},
			{ID: "n1", Node: "b", Kind: "task", Shape: dag.ShapeTask, Label: "b"},
		},
		Edges: []dag.OutlineEdge{{From: "n0", To: "n0.0", Verdict: "false", Label: "false"}, {From: "n0", To: "n1", Verdict: "true", Label: "true"}}}
}

// The drawings of a page stop at the budget: later dag rows keep the
// Mermaid source and say why they are not drawn; rows come in page order.
func TestDAGDrawingsStopAtTheBudget(t *testing.T) {
	p := &page{}
	for i := range 10 {
		p.Groups = append(p.Groups, caseView{ID: fmt.Sprint(i), Rows: []rowView{{Metric: "m", DAG: &dagView{res: &dag.Result{}}}}})
	}
	o := outline()
	l, err := layoutOutline(&o)
	if err != nil {
		t.Fatal(err)
	}
	one := len(l.svg("decision graph of m with the path of case 0", pathMarks{}))
	drawDAGs(p, []dag.Outline{o}, 3*one+10)
	var drawn, refused int
	for i, g := range p.Groups {
		d := g.Rows[0].DAG
		switch {
		case d.SVG != "" && i < 3:
			drawn++
		case d.SVG == "" && strings.HasPrefix(d.SVGNote, "not drawn: the page already holds"):
			refused++
		default:
			t.Errorf("row %d: svg %d bytes, note %q", i, len(d.SVG), d.SVGNote)
		}
	}
	if drawn != 3 || refused != 7 {
		t.Errorf("%d drawn, %d refused; want 3 and 7", drawn, refused)
	}
}

// Layout: the root above its children, siblings side by side, every node
// inside the drawing.
func TestLayoutLayers(t *testing.T) {
	o := outline()
	l, err := layoutOutline(&o)
	if err != nil {
		t.Fatal(err)
	}
	if !(l.y[0] < l.y[1] && l.y[1] == l.y[2] && l.x[1] != l.x[2]) {
		t.Errorf("positions x %v y %v; want n0 above its two children, side by side", l.x, l.y)
	}
	for i := range o.Nodes {
		if l.x[i]-l.w[i]/2 < 0 || l.x[i]+l.w[i]/2 > l.width || l.y[i]+nodeHeight/2 > l.height {
			t.Errorf("node %d at (%v, %v) w %v lies outside %vx%v", i, l.x[i], l.y[i], l.w[i], l.width, l.height)
		}
	}
	for _, bad := range []dag.Outline{
		{},
		{Nodes: []dag.OutlineNode{{ID: "a"}, {ID: "a"}}},
		{Nodes: []dag.OutlineNode{{ID: "a"}}, Edges: []dag.OutlineEdge{{From: "a", To: "zz"}}},
	} {
		if _, err := layoutOutline(&bad); err == nil {
			t.Errorf("outline %+v was laid out", bad)
		}
	}
}

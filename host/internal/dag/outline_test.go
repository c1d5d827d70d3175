package dag

import (
	"fmt"
	"strings"
	"testing"
)

// The outline has every node and leaf once, with a shape per class, and
// every data and verdict edge Render draws, between outline ids.
func TestOutlineMatchesTheGraph(t *testing.T) {
	g := mustGraph(t, renderGraph)
	o := g.Outline("quality")
	ids := map[string]OutlineNode{}
	for _, n := range o.Nodes {
		if _, dup := ids[n.ID]; dup {
			t.Fatalf("outline id %q twice", n.ID)
		}
		ids[n.ID] = n
	}
	var shapes []string
	for _, n := range o.Nodes {
		shapes = append(shapes, n.Node+"/"+n.Shape+"/"+n.Label)
	}
	want := "gate/code/gate gate/score/0/10 extract/task/extract notes/code_task/notes has_answer/decision/has_answer has_answer/metric/helpfulness has_answer/score/2/10 tone/decision/tone"
	if got := strings.Join(shapes, " "); !strings.HasPrefix(got, want) {
		t.Errorf("nodes\n%s\nwant prefix\n%s", got, want)
	}
	var edges []string
	for _, e := range o.Edges {
		from, to := ids[e.From], ids[e.To]
		if from.ID == "" || to.ID == "" {
			t.Fatalf("edge %+v names an id not in the outline", e)
		}
		kind := "verdict " + e.Verdict
		if e.Data {
			kind = "data " + e.Label
		}
		edges = append(edges, fmt.Sprintf("%s->%s(%s)", from.Node, to.Label, kind))
	}
	for _, w := range []string{"gate->extract(verdict true)", "gate->0/10(verdict false)", "extract->has_answer(data Claims)",
		"extract->notes(data Claims)", "has_answer->helpfulness(verdict true)", "notes->tone(data notes)"} {
		if !strings.Contains(strings.Join(edges, " "), w) {
			t.Errorf("edges lack %s: %v", w, edges)
		}
	}
	// Render draws one edge per -.-> or -->: the outline has as many.
	mer := Render(g, nil)
	if n := strings.Count(mer, "-.->") + strings.Count(mer, "-->"); n != len(o.Edges) {
		t.Errorf("outline has %d edges, Render draws %d", len(o.Edges), n)
	}
}

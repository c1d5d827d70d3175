package dag

import (
	"fmt"
	"strconv"
	"strings"
)

// Render draws the graph as a Mermaid flowchart. Task nodes are rectangles,
// binary and choice nodes diamonds, code nodes hexagons, output-producing
// plugin nodes subroutines; score leaves are small circles and metric
// leaves stadiums. Data edges are dashed and labelled with the parent's
// output label; control and leaf edges are labelled with the verdict.
//
// With a Result, executed nodes and fired leaves get class "taken" (failed
// nodes "failed", the rest "skipped") and the edges the case took are
// styled by linkStyle, so a person sees the path. The output depends only
// on its arguments.
func Render(g *Graph, highlight *Result) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	if g == nil {
		return b.String()
	}
	recs := map[string]*NodeRecord{}
	fired := map[[2]string]*Leaf{}
	if highlight != nil {
		for i := range highlight.Nodes {
			recs[highlight.Nodes[i].ID] = &highlight.Nodes[i]
		}
		for i := range highlight.Leaves {
			l := &highlight.Leaves[i]
			fired[[2]string{l.NodeID, l.Verdict}] = l
		}
		fmt.Fprintf(&b, "  %%%% score %s (%s of %d leaves)\n",
			strconv.FormatFloat(highlight.Score, 'f', 4, 64), highlight.Aggregate, len(highlight.Leaves))
	}
	var taken, failed, skipped []string
	mark := func(id string, ran, bad bool) {
		switch {
		case highlight == nil:
		case bad:
			failed = append(failed, id)
		case ran:
			taken = append(taken, id)
		default:
			skipped = append(skipped, id)
		}
	}

	// Nodes, each followed by its leaves.
	for _, n := range g.Nodes {
		id := mid(n)
		label := esc(n.ID) + "<br/>" + esc(n.Kind)
		open, closing := shape(n.Class)
		fmt.Fprintf(&b, "  %s%s\"%s\"%s\n", id, open, label, closing)
		rec := recs[n.ID]
		mark(id, rec != nil, rec != nil && rec.Error != "")
		for i, vd := range n.Spec.Verdicts {
			if !vd.IsLeaf() {
				continue
			}
			lid := leafID(n, i)
			l := fired[[2]string{n.ID, vd.Key}]
			if vd.Score != nil {
				fmt.Fprintf(&b, "  %s((\"%s/10\"))\n", lid, esc(fmtPoints(*vd.Score)))
			} else {
				text := "metric<br/>" + esc(vd.Metric)
				if l != nil {
					text += "<br/>" + strconv.FormatFloat(l.Score, 'f', 2, 64)
				}
				fmt.Fprintf(&b, "  %s([\"%s\"])\n", lid, text)
			}
			mark(lid, l != nil, rec != nil && rec.Verdict == vd.Key && l == nil)
		}
	}

	// Edges, counted for linkStyle.
	var links []string
	edge := 0
	for _, n := range g.Nodes {
		rec := recs[n.ID]
		ok := rec != nil && rec.Error == ""
		for _, ch := range n.Children {
			fmt.Fprintf(&b, "  %s -.->|\"%s\"| %s\n", mid(n), esc(n.Label), mid(ch))
			if ok && recs[ch.ID] != nil {
				links = append(links, strconv.Itoa(edge))
			}
			edge++
		}
		for i, vd := range n.Spec.Verdicts {
			var to string
			switch t := n.Then[vd.Key]; {
			case t != nil:
				to = mid(t)
			case vd.IsLeaf():
				to = leafID(n, i)
			default:
				continue
			}
			fmt.Fprintf(&b, "  %s -->|\"%s\"| %s\n", mid(n), esc(vd.Key), to)
			if ok && rec.Verdict == vd.Key {
				links = append(links, strconv.Itoa(edge))
			}
			edge++
		}
	}

	if highlight != nil {
		b.WriteString("  classDef taken fill:#d1fadf,stroke:#039855,stroke-width:2px\n")
		b.WriteString("  classDef failed fill:#fee4e2,stroke:#d92d20,stroke-width:2px\n")
		b.WriteString("  classDef skipped fill:#f2f4f7,stroke:#d0d5dd,color:#98a2b3\n")
		for _, c := range []struct {
			name string
			ids  []string
		}{{"taken", taken}, {"failed", failed}, {"skipped", skipped}} {
			if len(c.ids) > 0 {
				fmt.Fprintf(&b, "  class %s %s\n", strings.Join(c.ids, ","), c.name)
			}
		}
		if len(links) > 0 {
			fmt.Fprintf(&b, "  linkStyle %s stroke:#039855,stroke-width:3px\n", strings.Join(links, ","))
		}
	}
	return b.String()
}

func mid(n *Node) string           { return "n" + strconv.Itoa(n.index) }
func leafID(n *Node, i int) string { return fmt.Sprintf("n%d_%d", n.index, i) }

func shape(c Class) (open, closing string) {
	switch c {
	case ClassBinary, ClassChoice:
		return "{", "}"
	case ClassCode:
		return "{{", "}}"
	case ClassCodeTask:
		return "[[", "]]"
	}
	return "[", "]"
}

// esc makes text safe inside a quoted Mermaid label.
var escaper = strings.NewReplacer(
	"#", "#35;",
	`"`, "#quot;",
	"<", "#lt;",
	">", "#gt;",
	"\r", " ",
	"\n", " ",
)

func esc(s string) string { return escaper.Replace(s) }

package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentanvil/anvil/host/internal/dag"
)

// A dag metric's graph is drawn as inline SVG by a small layered layout
// (Sugiyama's scheme, simplified): nodes in layers by their longest path
// from a root, ordered within a layer by the mean position of their
// parents, edges as curves from a parent's bottom to a child's top. The
// layout depends on the graph only, so every case of a metric draws the
// same picture, and the path the case took is its classes: taken,
// failed and skipped nodes and leaves, taken edges. No script, font or
// library is loaded: the page stays one self-contained file.

// maxDrawnNodes bounds a drawing: a graph past it is listed, not drawn.
const maxDrawnNodes = 200

// Drawing metrics, in SVG user units (pixels at 100%).
const (
	layerGap   = 64
	nodeGap    = 22
	nodeHeight = 34
	charWidth  = 7.2
	minWidth   = 64
	maxWidth   = 200
	margin     = 12
	maxLabel   = 26 // runes of a label drawn; the title holds all of it
)

// layout is the position of every node of an outline.
type layout struct {
	outline *dag.Outline
	index   map[string]int // outline id → node index
	x, y    []float64      // centre of each node
	w       []float64      // width of each node
	width   float64
	height  float64
}

// layoutOutline places o's nodes, or says why it will not draw o.
func layoutOutline(o *dag.Outline) (*layout, error) {
	n := len(o.Nodes)
	if n == 0 {
		return nil, fmt.Errorf("the graph has no nodes")
	}
	if n > maxDrawnNodes {
		return nil, fmt.Errorf("the graph has %d nodes and leaves; drawings stop at %d", n, maxDrawnNodes)
	}
	l := &layout{outline: o, index: make(map[string]int, n), x: make([]float64, n), y: make([]float64, n), w: make([]float64, n)}
	for i, nd := range o.Nodes {
		if _, dup := l.index[nd.ID]; dup {
			return nil, fmt.Errorf("node id %q appears twice in the outline", nd.ID)
		}
		l.index[nd.ID] = i
	}
	parents := make([][]int, n)
	children := make([][]int, n)
	for _, e := range o.Edges {
		from, ok1 := l.index[e.From]
		to, ok2 := l.index[e.To]
		if !ok1 || !ok2 || from == to {
			return nil, fmt.Errorf("edge %s → %s names a node not in the outline", e.From, e.To)
		}
		parents[to] = append(parents[to], from)
		children[from] = append(children[from], to)
	}

	// Layers: longest path from a root, by Kahn's algorithm; what is left
	// over is a cycle, which a validated dag never has.
	layer := make([]int, n)
	indeg := make([]int, n)
	for i := range n {
		indeg[i] = len(parents[i])
	}
	var queue []int
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	seen := 0
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		seen++
		for _, c := range children[v] {
			layer[c] = max(layer[c], layer[v]+1)
			if indeg[c]--; indeg[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	if seen != n {
		return nil, fmt.Errorf("the graph has a cycle")
	}
	depth := 0
	for _, lv := range layer {
		depth = max(depth, lv)
	}
	layers := make([][]int, depth+1)
	for i := range n { // outline order within a layer to start
		layers[layer[i]] = append(layers[layer[i]], i)
	}

	// Order: two sweeps down by the parents' mean position, which
	// untangles the crossings a dag's usual fan-out and fan-in make.
	pos := make([]float64, n)
	setPos := func(ly []int) {
		for k, v := range ly {
			pos[v] = float64(k)
		}
	}
	setPos(layers[0])
	for range 2 {
		for d := 1; d <= depth; d++ {
			ly := layers[d]
			bary := make(map[int]float64, len(ly))
			for k, v := range ly {
				if len(parents[v]) == 0 {
					bary[v] = float64(k)
					continue
				}
				sum := 0.0
				for _, p := range parents[v] {
					sum += pos[p]
				}
				bary[v] = sum / float64(len(parents[v]))
			}
			sort.SliceStable(ly, func(a, b int) bool { return bary[ly[a]] < bary[ly[b]] })
			setPos(ly)
		}
	}

	// Coordinates: each layer centred on the widest.
	for i, nd := range o.Nodes {
		l.w[i] = nodeWidth(nd)
	}
	rowWidth := make([]float64, len(layers))
	for d, ly := range layers {
		for k, v := range ly {
			if k > 0 {
				rowWidth[d] += nodeGap
			}
			rowWidth[d] += l.w[v]
		}
		l.width = math.Max(l.width, rowWidth[d])
	}
	for d, ly := range layers {
		x := (l.width - rowWidth[d]) / 2
		for _, v := range ly {
			l.x[v] = margin + x + l.w[v]/2
			l.y[v] = margin + float64(d)*(nodeHeight+layerGap) + nodeHeight/2
			x += l.w[v] + nodeGap
		}
	}
	l.width += 2 * margin
	l.height = 2*margin + float64(depth+1)*nodeHeight + float64(depth)*layerGap
	return l, nil
}

func nodeWidth(nd dag.OutlineNode) float64 {
	w := float64(utf8.RuneCountInString(clip(nd.Label)))*charWidth + 24
	switch nd.Shape {
	case dag.ShapeDecision:
		w += 28 // a diamond's text sits in its middle half
	case dag.ShapeCode:
		w += 16
	}
	return math.Min(math.Max(w, minWidth), maxWidth)
}

func clip(s string) string { return clipRunes(s, maxLabel) }

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// pathMarks are the classes one case gives a drawing: the outline ids of
// the nodes and leaves it took, of those that failed, and the edges it
// took (by index in the outline).
type pathMarks struct {
	taken  map[string]bool
	failed map[string]bool
	edges  map[int]bool
	// notes are written under nodes and leaves, by outline id: how the
	// walks of a case scored more than once split (dagsamples.go).
	notes map[string]string
}

// marksOf finds the path res took through o: a node ran when res has a
// record of it (failed when the record has an error); a leaf fired when
// res lists it; a data edge was taken when both ends ran and the parent
// did not fail, a verdict edge when the parent gave that verdict.
func marksOf(o *dag.Outline, res *dag.Result) pathMarks {
	m := pathMarks{taken: map[string]bool{}, failed: map[string]bool{}, edges: map[int]bool{}}
	if res == nil {
		return m
	}
	ran := map[string]*dag.NodeRecord{}
	for i := range res.Nodes {
		ran[res.Nodes[i].ID] = &res.Nodes[i]
	}
	fired := map[[2]string]bool{}
	for _, l := range res.Leaves {
		fired[[2]string{l.NodeID, l.Verdict}] = true
	}
	byID := map[string]dag.OutlineNode{}
	for _, nd := range o.Nodes {
		byID[nd.ID] = nd
		if nd.Verdict == "" && nd.Kind != "" {
			if rec := ran[nd.Node]; rec != nil {
				m.taken[nd.ID] = rec.Error == ""
				m.failed[nd.ID] = rec.Error != ""
			}
			continue
		}
		if fired[[2]string{nd.Node, nd.Verdict}] {
			m.taken[nd.ID] = true
		}
	}
	for i, e := range o.Edges {
		from := ran[byID[e.From].Node]
		if from == nil || from.Error != "" {
			continue
		}
		if e.Data {
			m.edges[i] = m.taken[e.To] || m.failed[e.To]
		} else {
			m.edges[i] = from.Verdict == e.Verdict
		}
	}
	return m
}

// svg draws the layout with a case's path marked, as an inline <svg>
// whose colours come from the page's CSS (so it follows dark mode).
func (l *layout) svg(title string, marks pathMarks) template.HTML {
	var b strings.Builder
	o := l.outline
	fmt.Fprintf(&b, `<svg class="dag-svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`,
		l.width, l.height, l.width, l.height, html.EscapeString(title))
	// The arrowhead marker (#dag-arrow) is defined once for the page.
	// Edges first, under the nodes; their labels after the nodes.
	var labels strings.Builder
	for i, e := range o.Edges {
		a, c := l.index[e.From], l.index[e.To]
		x1, y1 := l.x[a], l.y[a]+nodeHeight/2
		x2, y2 := l.x[c], l.y[c]-nodeHeight/2
		bend := (y2 - y1) / 2
		cls := "dag-edge"
		if e.Data {
			cls += " data"
		}
		if marks.edges[i] {
			cls += " taken"
		}
		fmt.Fprintf(&b, `<path class="%s" d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" marker-end="url(#dag-arrow)"/>`,
			cls, x1, y1, x1, y1+bend, x2, y2-bend, x2, y2)
		if e.Label != "" {
			mx, my := (x1+x2)/2, (y1+y2)/2
			text := clip(e.Label)
			tw := float64(utf8.RuneCountInString(text))*6.2 + 8
			fmt.Fprintf(&labels, `<g class="%s-label"><rect x="%.1f" y="%.1f" width="%.1f" height="15" rx="3"/><text x="%.1f" y="%.1f">%s</text></g>`,
				strings.ReplaceAll(cls, " ", "-"), mx-tw/2, my-8, tw, mx, my+3.5, html.EscapeString(text))
		}
	}
	for i, nd := range o.Nodes {
		cls := "dag-node " + nd.Shape
		switch {
		case marks.failed[nd.ID]:
			cls += " failed"
		case marks.taken[nd.ID]:
			cls += " taken"
		case len(marks.taken)+len(marks.failed) > 0:
			cls += " skipped"
		}
		x, y, w, h := l.x[i], l.y[i], l.w[i], float64(nodeHeight)
		tip := nd.Node
		if nd.Kind != "" {
			tip += " (" + nd.Kind + ")"
		} else {
			tip += " = " + nd.Verdict + " → " + nd.Label
		}
		fmt.Fprintf(&b, `<g class="%s" data-node="%s"><title>%s</title>`, cls, html.EscapeString(nd.ID), html.EscapeString(tip))
		switch nd.Shape {
		case dag.ShapeDecision:
			fmt.Fprintf(&b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`, x, y-h/2, x+w/2, y, x, y+h/2, x-w/2, y)
		case dag.ShapeCode:
			d := 10.0
			fmt.Fprintf(&b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`,
				x-w/2+d, y-h/2, x+w/2-d, y-h/2, x+w/2, y, x+w/2-d, y+h/2, x-w/2+d, y+h/2, x-w/2, y)
		case dag.ShapeScore, dag.ShapeMetric:
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="%.1f"/>`, x-w/2, y-h/2, w, h, h/2)
		case dag.ShapeCodeTask:
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2"/><path d="M%.1f,%.1fV%.1fM%.1f,%.1fV%.1f"/>`,
				x-w/2, y-h/2, w, h, x-w/2+6, y-h/2, y+h/2, x+w/2-6, y-h/2, y+h/2)
		default:
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4"/>`, x-w/2, y-h/2, w, h)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`, x, y+4, html.EscapeString(clip(nd.Label)))
		if note := marks.notes[nd.ID]; note != "" {
			fmt.Fprintf(&b, `<text class="dag-note" x="%.1f" y="%.1f">%s</text>`, x, y+h/2+11, html.EscapeString(clipRunes(note, maxNoteRunes)))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(labels.String())
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text above is escaped
}

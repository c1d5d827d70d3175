package dag

import (
	"strconv"
)

// Outline is a graph's structure as a report draws it — nodes, leaves and
// edges, nothing of the prompts — so a report can draw the graph and the
// path a case took (a Result) without the config.
type Outline struct {
	Metric string        `json:"metric"`
	Nodes  []OutlineNode `json:"nodes"`
	Edges  []OutlineEdge `json:"edges"`
}

// Shapes of an OutlineNode.
const (
	ShapeTask     = "task"      // produces output: a rectangle
	ShapeDecision = "decision"  // binary or choice: a diamond
	ShapeCode     = "code"      // a code gate with fixed verdicts: a hexagon
	ShapeCodeTask = "code_task" // a plugin node producing output
	ShapeScore    = "score"     // a score leaf
	ShapeMetric   = "metric"    // a child-metric leaf
)

// OutlineNode is a node of the graph, or one of its leaves.
type OutlineNode struct {
	// ID is unique in the outline: "n<node index>" for a node and
	// "n<node index>.<verdict index>" for a leaf (node ids may hold any
	// character, so they are not used as drawing ids).
	ID string `json:"id"`
	// Node is the dag node: the node itself, or the leaf's node.
	Node string `json:"node"`
	// Kind is the node's kind; empty for a leaf.
	Kind  string `json:"kind,omitempty"`
	Shape string `json:"shape"`
	// Label is what the drawing writes: the node id, "7/10", the metric.
	Label string `json:"label"`
	// Verdict is a leaf's verdict.
	Verdict string `json:"verdict,omitempty"`
}

// OutlineEdge is a data edge (a parent's output feeding a child) or a
// verdict edge (to the node or leaf the verdict leads to).
type OutlineEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Data marks a data edge; Label is then the parent's output label.
	Data  bool   `json:"data,omitempty"`
	Label string `json:"label"`
	// Verdict is a verdict edge's verdict.
	Verdict string `json:"verdict,omitempty"`
}

// Outline returns the graph's structure for drawing, in configuration
// order: each node followed by its leaves; data edges, then verdict edges.
func (g *Graph) Outline(metric string) Outline {
	o := Outline{Metric: metric}
	for _, n := range g.Nodes {
		o.Nodes = append(o.Nodes, OutlineNode{ID: mid(n), Node: n.ID, Kind: n.Kind, Shape: outlineShape(n.Class), Label: n.ID})
		for i, vd := range n.Spec.Verdicts {
			if !vd.IsLeaf() {
				continue
			}
			leaf := OutlineNode{ID: leafOutlineID(n, i), Node: n.ID, Verdict: vd.Key, Shape: ShapeMetric, Label: vd.Metric}
			if vd.Score != nil {
				leaf.Shape, leaf.Label = ShapeScore, fmtPoints(*vd.Score)+"/10"
			}
			o.Nodes = append(o.Nodes, leaf)
		}
	}
	for _, n := range g.Nodes {
		for _, ch := range n.Children {
			o.Edges = append(o.Edges, OutlineEdge{From: mid(n), To: mid(ch), Data: true, Label: n.Label})
		}
		for i, vd := range n.Spec.Verdicts {
			to := ""
			switch t := n.Then[vd.Key]; {
			case t != nil:
				to = mid(t)
			case vd.IsLeaf():
				to = leafOutlineID(n, i)
			default:
				continue
			}
			o.Edges = append(o.Edges, OutlineEdge{From: mid(n), To: to, Label: vd.Key, Verdict: vd.Key})
		}
	}
	return o
}

func leafOutlineID(n *Node, i int) string {
	return mid(n) + "." + strconv.Itoa(i)
}

func outlineShape(c Class) string {
	switch c {
	case ClassBinary, ClassChoice:
		return ShapeDecision
	case ClassCode:
		return ShapeCode
	case ClassCodeTask:
		return ShapeCodeTask
	}
	return ShapeTask
}

package report

import (
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/results"
)

// A dag metric scored more than once per case (samples: N, or a panel)
// walks its graph once per scoring. The drawing of a case marks the first
// walk's path and writes under each node how the walks split ("true 2/3 ·
// false 1/3"), under each leaf how often it fired; the metric's card
// lists, per node, in how many cases the walks disagreed.

// maxNoteRunes bounds a node's note in a drawing; the node's title holds
// the verdicts in full.
const maxNoteRunes = 40

// spreadNotes are the notes a case's walks give the drawing of outline o,
// by outline id; nil when the case was walked once.
func spreadNotes(o *dag.Outline, ds *results.DAGSpread) map[string]string {
	if ds == nil || ds.Scorings < 2 {
		return nil
	}
	nodes := map[string]*results.NodeSpread{}
	for i := range ds.Nodes {
		nodes[ds.Nodes[i].Node] = &ds.Nodes[i]
	}
	leaves := map[[2]string]*results.LeafSpread{}
	for i := range ds.Leaves {
		leaves[[2]string{ds.Leaves[i].Node, ds.Leaves[i].Verdict}] = &ds.Leaves[i]
	}
	notes := map[string]string{}
	for _, nd := range o.Nodes {
		if nd.Verdict == "" && nd.Kind != "" {
			if ns := nodes[nd.Node]; ns != nil {
				notes[nd.ID] = nodeNote(ns, ds.Scorings)
			}
			continue
		}
		if ls := leaves[[2]string{nd.Node, nd.Verdict}]; ls != nil {
			note := fmt.Sprintf("fired %d/%d", ls.Fired, ds.Scorings)
			if ls.StdDev > 0 {
				note += fmt.Sprintf(" · %.2f±%.2f", ls.Mean, ls.StdDev)
			}
			notes[nd.ID] = note
		}
	}
	return notes
}

// nodeNote is "true 2/3 · false 1/3" for a decision, "ran 2/3" for a
// node without verdicts, with the walks whose run of it failed.
func nodeNote(ns *results.NodeSpread, walks int) string {
	var parts []string
	for _, vc := range ns.Verdicts {
		parts = append(parts, fmt.Sprintf("%s %d/%d", vc.Verdict, vc.Count, walks))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("ran %d/%d", ns.Ran-ns.Failed, walks))
	}
	if ns.Failed > 0 {
		parts = append(parts, fmt.Sprintf("error %d/%d", ns.Failed, walks))
	}
	return strings.Join(parts, " · ")
}

// dagSamplesView is a dag metric's walks over the run, on its card.
type dagSamplesView struct {
	Cases, PathDiffers int
	Share              string
	PathCases          []caseLink
	Nodes              []dagNodeSamplesView
}

type dagNodeSamplesView struct {
	Node           string
	Cases, Differs int
	Verdicts       string
}

func dagSamplesViewOf(ds *results.DAGSampleSummary, anchors map[string]string) *dagSamplesView {
	if ds == nil || ds.Cases == 0 {
		return nil
	}
	v := &dagSamplesView{Cases: ds.Cases, PathDiffers: ds.PathDiffers, Share: fmt.Sprintf("%.1f%%", ds.PathDifferShare*100)}
	for _, id := range ds.PathDifferCases {
		v.PathCases = append(v.PathCases, caseLink{ID: id, Anchor: anchors[id]})
	}
	for _, n := range ds.Nodes {
		var parts []string
		for _, vc := range n.Verdicts {
			parts = append(parts, fmt.Sprintf("%s %d", vc.Verdict, vc.Count))
		}
		v.Nodes = append(v.Nodes, dagNodeSamplesView{Node: n.Node, Cases: n.Cases, Differs: n.Differs, Verdicts: strings.Join(parts, " · ")})
	}
	return v
}

// dagSamplesLine is a dag metric's walks for the terminal: "path differs
// on 2 of 5 sampled cases (verdict split: states_fact 2)".
func dagSamplesLine(ds *results.DAGSampleSummary) string {
	line := fmt.Sprintf("path differs on %d of %d sampled cases", ds.PathDiffers, ds.Cases)
	var split []string
	for _, n := range ds.Nodes {
		if n.Differs > 0 {
			split = append(split, fmt.Sprintf("%s %d", n.Node, n.Differs))
		}
	}
	if len(split) > 0 {
		line += " (verdict split: " + strings.Join(split, ", ") + ")"
	}
	return line
}

package engine

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/results"
)

// dagSpreadOf reads the walks in the details of a dag metric's scorings.
// It returns nil unless at least two walks decode: one walk has no spread.
func dagSpreadOf(runs [][]results.MetricResult) *results.DAGSpread {
	var walks []dag.Result
	for _, judgeRuns := range runs {
		for _, sr := range judgeRuns {
			var res dag.Result
			if len(sr.Details) == 0 || json.Unmarshal(sr.Details, &res) != nil || len(res.Nodes) == 0 {
				continue
			}
			walks = append(walks, res)
		}
	}
	if len(walks) < 2 {
		return nil
	}
	ds := &results.DAGSpread{Scorings: len(walks)}
	nodeAt := map[string]int{}
	verdicts := map[string]map[string]int{}
	paths := map[string]bool{}
	type leafKey struct{ node, verdict string }
	leafScores := map[leafKey][]float64{}
	for _, w := range walks {
		var path strings.Builder
		for _, n := range w.Nodes {
			i, seen := nodeAt[n.ID]
			if !seen {
				i = len(ds.Nodes)
				nodeAt[n.ID] = i
				ds.Nodes = append(ds.Nodes, results.NodeSpread{Node: n.ID})
				verdicts[n.ID] = map[string]int{}
			}
			ds.Nodes[i].Ran++
			if n.Error != "" {
				ds.Nodes[i].Failed++
			} else if n.Verdict != "" {
				verdicts[n.ID][n.Verdict]++
			}
			// Node ids and verdicts are JSON-quoted, so no id can fake
			// another path.
			b, _ := json.Marshal([2]string{n.ID, n.Verdict})
			path.Write(b)
		}
		paths[path.String()] = true
		for _, l := range w.Leaves {
			k := leafKey{l.NodeID, l.Verdict}
			leafScores[k] = append(leafScores[k], l.Score)
		}
	}
	ds.Paths = len(paths)
	ds.PathDiffers = ds.Paths > 1
	for i := range ds.Nodes {
		ns := &ds.Nodes[i]
		ns.Verdicts = results.VerdictCounts(verdicts[ns.Node])
		ns.Differs = len(ns.Verdicts) > 1 || (ns.Failed > 0 && ns.Failed < ns.Ran)
	}
	for k, scores := range leafScores {
		sp := spreadOf(scores, 0)
		ds.Leaves = append(ds.Leaves, results.LeafSpread{Node: k.node, Verdict: k.verdict, Fired: len(scores), Mean: results.Round4(sp.Mean), StdDev: results.Round4(sp.StdDev)})
	}
	sort.Slice(ds.Leaves, func(i, j int) bool {
		a, b := ds.Leaves[i], ds.Leaves[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.Verdict < b.Verdict
	})
	return ds
}

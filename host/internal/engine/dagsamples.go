package engine

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/agentanvil/anvil/host/internal/dag"
)

// DAGSpread is how the scorings of a dag metric with samples: N (or a
// panel) walked its graph on one case: per node how often it ran and
// which verdicts it gave, per leaf how often it fired and the spread of
// its score. The case's Details stay the first scoring's walk; this is
// what the other walks add.
type DAGSpread struct {
	// Scorings is how many walks were read (samples × judges).
	Scorings int `json:"scorings"`
	// Paths is how many distinct paths (nodes run with their verdicts)
	// the walks took; PathDiffers says more than one.
	Paths       int  `json:"paths"`
	PathDiffers bool `json:"path_differs,omitempty"`
	// Nodes in the order the walks first ran them.
	Nodes []NodeSpread `json:"nodes"`
	// Leaves fired in any walk, sorted by node then verdict.
	Leaves []LeafSpread `json:"leaves,omitempty"`
}

// NodeSpread is one node across a case's walks.
type NodeSpread struct {
	Node string `json:"node"`
	// Ran counts the walks that ran the node; Failed those whose run of it
	// ended in an error.
	Ran    int `json:"ran"`
	Failed int `json:"failed,omitempty"`
	// Verdicts counts each verdict the node gave, sorted by verdict.
	Verdicts []VerdictCount `json:"verdicts,omitempty"`
	// Differs says the walks that ran the node did not all give one verdict.
	Differs bool `json:"differs,omitempty"`
}

// VerdictCount is how many walks gave a node one verdict.
type VerdictCount struct {
	Verdict string `json:"verdict"`
	Count   int    `json:"count"`
}

// LeafSpread is one leaf across a case's walks: how often it fired, and
// the mean and standard deviation (n-1) of the score it gave when it did
// (a metric leaf's child score varies; a score leaf's does not).
type LeafSpread struct {
	Node    string  `json:"node"`
	Verdict string  `json:"verdict"`
	Fired   int     `json:"fired"`
	Mean    float64 `json:"mean"`
	StdDev  float64 `json:"stddev,omitempty"`
}

// dagSpreadOf reads the walks in the details of a dag metric's scorings.
// It returns nil unless at least two walks decode: one walk has no spread.
func dagSpreadOf(runs [][]MetricResult) *DAGSpread {
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
	ds := &DAGSpread{Scorings: len(walks)}
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
				ds.Nodes = append(ds.Nodes, NodeSpread{Node: n.ID})
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
		ns.Verdicts = sortedCounts(verdicts[ns.Node])
		ns.Differs = len(ns.Verdicts) > 1 || (ns.Failed > 0 && ns.Failed < ns.Ran)
	}
	for k, scores := range leafScores {
		sp := spreadOf(scores, 0)
		ds.Leaves = append(ds.Leaves, LeafSpread{Node: k.node, Verdict: k.verdict, Fired: len(scores), Mean: round4(sp.Mean), StdDev: round4(sp.StdDev)})
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

func sortedCounts(m map[string]int) []VerdictCount {
	out := make([]VerdictCount, 0, len(m))
	for v, c := range m {
		out = append(out, VerdictCount{Verdict: v, Count: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Verdict < out[j].Verdict })
	return out
}

// DAGSampleSummary is, for a dag metric scored more than once per case,
// how stable its walks were over the run.
type DAGSampleSummary struct {
	// Cases counts the cases with a DAGSpread.
	Cases int `json:"cases"`
	// PathDiffers counts the cases whose walks took more than one path,
	// PathDifferShare is their share of Cases, and PathDifferCases lists
	// up to 20 of them.
	PathDiffers     int      `json:"path_differs"`
	PathDifferShare float64  `json:"path_differ_share"`
	PathDifferCases []string `json:"path_differ_cases,omitempty"`
	// Nodes in the order the run first ran them.
	Nodes []NodeSampleSummary `json:"nodes"`
}

// NodeSampleSummary is one node over the run's sampled cases.
type NodeSampleSummary struct {
	Node string `json:"node"`
	// Cases counts the cases in which some walk ran the node; Differs
	// those in which its walks disagreed on its verdict.
	Cases   int `json:"cases"`
	Differs int `json:"differs"`
	// Verdicts counts each verdict over every walk of every case.
	Verdicts []VerdictCount `json:"verdicts,omitempty"`
}

// dagSampleAcc gathers a DAGSampleSummary while results are read back.
type dagSampleAcc struct {
	sum      DAGSampleSummary
	nodeAt   map[string]int
	verdicts []map[string]int
}

func (a *dagSampleAcc) add(caseID string, ds *DAGSpread) {
	if ds == nil {
		return
	}
	if a.nodeAt == nil {
		a.nodeAt = map[string]int{}
	}
	a.sum.Cases++
	if ds.PathDiffers {
		a.sum.PathDiffers++
		if len(a.sum.PathDifferCases) < 20 {
			a.sum.PathDifferCases = append(a.sum.PathDifferCases, caseID)
		}
	}
	for _, ns := range ds.Nodes {
		i, seen := a.nodeAt[ns.Node]
		if !seen {
			i = len(a.sum.Nodes)
			a.nodeAt[ns.Node] = i
			a.sum.Nodes = append(a.sum.Nodes, NodeSampleSummary{Node: ns.Node})
			a.verdicts = append(a.verdicts, map[string]int{})
		}
		a.sum.Nodes[i].Cases++
		if ns.Differs {
			a.sum.Nodes[i].Differs++
		}
		for _, vc := range ns.Verdicts {
			a.verdicts[i][vc.Verdict] += vc.Count
		}
	}
}

func (a *dagSampleAcc) finish() *DAGSampleSummary {
	if a.sum.Cases == 0 {
		return nil
	}
	s := a.sum
	s.PathDifferShare = round4(float64(s.PathDiffers) / float64(s.Cases))
	for i := range s.Nodes {
		s.Nodes[i].Verdicts = sortedCounts(a.verdicts[i])
	}
	return &s
}

package results

import "sort"

// VerdictCounts lists m's counts sorted by verdict.
func VerdictCounts(m map[string]int) []VerdictCount {
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

// dagSampleAcc gathers a DAGSampleSummary as cases are added.
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
	s.PathDifferShare = Round4(float64(s.PathDiffers) / float64(s.Cases))
	for i := range s.Nodes {
		s.Nodes[i].Verdicts = VerdictCounts(a.verdicts[i])
	}
	return &s
}

package engine

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/results"
)

func walk(t *testing.T, leaves []dag.Leaf, nodes ...dag.NodeRecord) results.MetricResult {
	t.Helper()
	b, err := json.Marshal(dag.Result{Nodes: nodes, Leaves: leaves})
	if err != nil {
		t.Fatal(err)
	}
	return results.MetricResult{Kind: KindDAG, Details: b}
}

// dagSpreadOf counts what the walks did, leaves out walks it cannot read,
// and gives no spread for fewer than two walks.
func TestDAGSpreadOf(t *testing.T) {
	yes := dag.NodeRecord{ID: "q", Kind: "binary", Verdict: "true"}
	no := dag.NodeRecord{ID: "q", Kind: "binary", Verdict: "false"}
	broke := dag.NodeRecord{ID: "q", Kind: "binary", Error: "judge: 503"}
	child := func(score float64) []dag.Leaf {
		return []dag.Leaf{{NodeID: "q", Verdict: "true", Score: score, Metric: "tone"}}
	}
	for _, tc := range []struct {
		name  string
		runs  [][]results.MetricResult
		want  string
		paths int
	}{
		{"one walk", [][]results.MetricResult{{walk(t, nil, yes)}}, "<nil>", 0},
		{"alike", [][]results.MetricResult{{walk(t, child(1), yes), walk(t, child(1), yes)}}, "[{q 2 0 [{true 2}] false}] [{q true 2 1 0}]", 1},
		// A metric leaf's child score varies between walks: mean .6, sd .2828.
		{"child score spread", [][]results.MetricResult{{walk(t, child(.8), yes), walk(t, child(.4), yes)}}, "[{q 2 0 [{true 2}] false}] [{q true 2 0.6 0.2828}]", 1},
		{"a failed walk splits", [][]results.MetricResult{{walk(t, nil, yes), walk(t, nil, broke)}}, "[{q 2 1 [{true 1}] true}] []", 2},
		// Walks of every judge of a panel count; an unreadable walk does not.
		{"panel, one unreadable", [][]results.MetricResult{{walk(t, nil, yes)}, {walk(t, nil, no), {Kind: KindDAG, Details: json.RawMessage(`{"nodes": 7}`)}}},
			"[{q 2 0 [{false 1} {true 1}] true}] []", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := dagSpreadOf(tc.runs)
			got := "<nil>"
			if ds != nil {
				got = fmt.Sprint(ds.Nodes, " ", ds.Leaves)
				if ds.Paths != tc.paths || ds.PathDiffers != (tc.paths > 1) {
					t.Errorf("paths %d differs %v; want %d", ds.Paths, ds.PathDiffers, tc.paths)
				}
			}
			if got != tc.want {
				t.Errorf("spread %s; want %s", got, tc.want)
			}
		})
	}
}

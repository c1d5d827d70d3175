package dag

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
)

// Usage is the accounting of a node run, a child metric run, or a whole
// evaluation.
type Usage struct {
	JudgeCalls   int     `json:"judge_calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	LatencyMS    float64 `json:"latency_ms"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.JudgeCalls += o.JudgeCalls
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.USD += o.USD
	u.LatencyMS += o.LatencyMS
}

// NodeOutcome is what a Runner reports for one node: the node kind's result
// and what it cost. A non-nil NodeResult.Error fails the node like a
// returned error does.
type NodeOutcome struct {
	abi.NodeResult
	Usage
}

// MetricOutcome is what a Runner reports for one child metric.
type MetricOutcome struct {
	// Score in [0,1].
	Score   float64 `json:"score"`
	Success bool    `json:"success"`
	Reason  string  `json:"reason,omitempty"`
	// ScoreMode is the metric's score mode ("weighted", "raw", ...), if any.
	ScoreMode string          `json:"score_mode,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
	// Error, when set, means the metric could not score the case; the dag
	// then fails on that leaf.
	Error *abi.Error `json:"error,omitempty"`
	Usage
}

// Leaf is a fired leaf: a verdict whose outcome is a score or a metric.
type Leaf struct {
	NodeID  string `json:"node_id"`
	Verdict string `json:"verdict"`
	// Score in [0,1]: points/10, or the child metric's score.
	Score float64 `json:"score"`
	// Points is the configured 0–10 score of a score leaf.
	Points *float64 `json:"points,omitempty"`
	// Metric is the child metric of a metric leaf.
	Metric string `json:"metric,omitempty"`
}

// NodeRecord is one executed node.
type NodeRecord struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"`
	Verdict string          `json:"verdict,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Output  string          `json:"output,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	Usage
	Error string `json:"error,omitempty"`
}

// MetricRecord is one child metric run. A metric several leaves lead to
// runs once per case.
type MetricRecord struct {
	Metric    string          `json:"metric"`
	Score     float64         `json:"score"`
	Success   bool            `json:"success"`
	Reason    string          `json:"reason,omitempty"`
	ScoreMode string          `json:"score_mode,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
	Usage
	Error string `json:"error,omitempty"`
}

// Result is one case's walk through the graph.
type Result struct {
	// Score in [0,1]: the fired leaves aggregated. 0 when Error is set.
	Score float64 `json:"score"`
	// Aggregate used: min, mean or max.
	Aggregate string `json:"aggregate"`
	// Reason summarises the path: "gate=true → has_answer=false (score 2/10)".
	Reason string `json:"reason"`
	// Path lists the executed nodes in topological order, ties by
	// configuration order.
	Path []string `json:"path"`
	// Leaves fired, sorted by node id then verdict.
	Leaves []Leaf `json:"leaves"`
	// Nodes are the executed nodes, in Path order.
	Nodes []NodeRecord `json:"nodes"`
	// Metrics are the child metric runs, by name.
	Metrics []MetricRecord `json:"metrics,omitempty"`
	// Totals over nodes and child metrics; LatencyMS is their sum (work
	// time), WallMS the evaluation's wall-clock time.
	Totals Usage   `json:"totals"`
	WallMS float64 `json:"wall_ms"`
	// Error is set when the evaluation failed; what ran is still recorded.
	Error string `json:"error,omitempty"`
	// Mermaid is the whole graph with this case's path highlighted (Render),
	// filled in by the engine so a report needs no config to draw it.
	Mermaid string `json:"mermaid,omitempty"`
}

// NodeError is a node (or a child metric behind one of its verdicts) that
// failed.
type NodeError struct {
	NodeID string
	// Metric is set when a child metric failed.
	Metric string
	Err    error
}

func (e *NodeError) Error() string {
	if e.Metric != "" {
		return fmt.Sprintf("node %q: child metric %q: %v", e.NodeID, e.Metric, e.Err)
	}
	return fmt.Sprintf("node %q: %v", e.NodeID, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

func fmtPoints(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// pathReason summarises the executed path.
func pathReason(g *Graph, res *Result) string {
	leavesOf := map[string][]Leaf{}
	for _, l := range res.Leaves {
		leavesOf[l.NodeID] = append(leavesOf[l.NodeID], l)
	}
	steps := make([]string, 0, len(res.Nodes))
	for _, rec := range res.Nodes {
		n := g.Node(rec.ID)
		var s string
		switch {
		case rec.Error != "":
			s = rec.ID + " (failed)"
		case n != nil && !n.Class.Produces():
			s = rec.ID + "=" + rec.Verdict
		default:
			s = rec.ID
		}
		for _, l := range leavesOf[rec.ID] {
			if l.Metric != "" {
				s += fmt.Sprintf(" (metric %s %.2f)", l.Metric, l.Score)
			} else if l.Points != nil {
				s += fmt.Sprintf(" (score %s/10)", fmtPoints(*l.Points))
			}
		}
		steps = append(steps, s)
	}
	out := strings.Join(steps, " → ")
	if len(res.Leaves) > 1 {
		out += fmt.Sprintf("; %s of %d leaves = %.2f", res.Aggregate, len(res.Leaves), res.Score)
	}
	return out
}

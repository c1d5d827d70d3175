package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/results"
)

// dagRunner runs one case through a dag metric's graph: nodes through
// their plugins, child metrics through the engine with their full
// configuration (and the state they prepared once per run).
type dagRunner struct {
	e   *Engine
	m   *metric
	c   *abi.TestCase
	dry *dryRun
	sc  scoring

	// usage sums every node's and child's judge work (requests, calls,
	// HTTP attempts) for the metric's result; nodes run concurrently.
	mu    sync.Mutex
	usage results.JudgeUsage
	fuel  uint64
	// compileWait is the nodes' and children's waits for plugins still
	// compiling.
	compileWait waits
}

func (r *dagRunner) spent(u results.JudgeUsage) {
	r.mu.Lock()
	r.usage.Merge(u)
	r.mu.Unlock()
}

func (r *dagRunner) RunNode(ctx context.Context, n *dag.Node, inputs []abi.NodeInput, verdicts []string) (dag.NodeOutcome, error) {
	ref, ok := r.e.kinds[kindKey(abi.RoleNode, n.Kind)]
	if !ok {
		return dag.NodeOutcome{}, fmt.Errorf("no plugin provides node kind %q", n.Kind)
	}
	start := time.Now()
	r.compileWait.add(start, awaitCompile(ctx, ref.plugin))
	svc := r.e.scoringServices(r.sc, r.dry)
	res, err := ref.plugin.Node(ctx, svc, &abi.NodeRequest{
		Kind: n.Kind, NodeID: n.ID, Config: n.RequestConfig(), Inputs: inputs,
		Verdicts: verdicts, JudgeModel: r.sc.model, Case: *r.c,
	})
	u := svc.spent()
	r.spent(u)
	r.mu.Lock()
	r.fuel += svc.fuelSpent()
	r.mu.Unlock()
	out := dag.NodeOutcome{Usage: dag.Usage{JudgeCalls: u.Calls, InputTokens: u.InputTokens,
		OutputTokens: u.OutputTokens, USD: u.USD, LatencyMS: ms(time.Since(start))}}
	if err != nil {
		return out, err
	}
	out.NodeResult = *res
	return out, nil
}

func (r *dagRunner) RunMetric(ctx context.Context, name string) (dag.MetricOutcome, error) {
	child := r.e.all[name]
	if child == nil {
		return dag.MetricOutcome{}, fmt.Errorf("no metric %q", name)
	}
	start := time.Now()
	mr := r.e.measure(ctx, child, r.c, r.dry)
	r.compileWait.add(start, time.Duration(mr.CompileWaitMS*float64(time.Millisecond)))
	r.spent(mr.Usage)
	out := dag.MetricOutcome{Reason: mr.Reason, ScoreMode: mr.ScoreMode, Details: mr.Details, Error: mr.Error,
		Success: mr.Status == results.StatusPassed,
		Usage: dag.Usage{JudgeCalls: mr.Usage.Calls, InputTokens: mr.Usage.InputTokens,
			OutputTokens: mr.Usage.OutputTokens, USD: mr.Usage.USD, LatencyMS: mr.LatencyMS}}
	if mr.Score != nil {
		out.Score = *mr.Score
	} else if out.Error == nil {
		out.Error = abi.Errorf(abi.CodeMetric, "child metric %s was %s: %s", name, mr.Status, mr.Reason)
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measureDAG evaluates a dag metric on one case.
func (e *Engine) measureDAG(ctx context.Context, m *metric, c *abi.TestCase, dry *dryRun, sc scoring, r results.MetricResult) results.MetricResult {
	runner := &dagRunner{e: e, m: m, c: c, dry: dry, sc: sc}
	res, err := dag.Evaluate(ctx, m.graph, runner)
	r.Usage = runner.usage // Evaluate has returned: no node is running
	r.Fuel = runner.fuel
	r.CompileWaitMS += ms(runner.compileWait.total())
	if res != nil {
		res.Mermaid = dag.Render(m.graph, res)
		r.Details, _ = json.Marshal(res)
		r.Reason = res.Reason
	}
	if err != nil {
		var ae *abi.Error
		if errors.As(err, &ae) {
			cp := *ae
			cp.Message = err.Error()
			setError(&r, &cp)
		} else {
			setError(&r, &abi.Error{Code: abi.CodeMetric, Message: err.Error()})
		}
		return r
	}
	if m.graph.Reason == dag.ReasonJudge {
		e.proseReason(ctx, m, c, dry, sc, res, &r)
	}
	score := res.Score
	r.Score = &score
	r.Status = verdict(score, r.Threshold)
	return r
}

// proseReason makes the one extra judge call `reason: judge` asks for: a
// short prose explanation of the path the case took. The score stands
// whatever happens; a failed call keeps the path summary and says why.
func (e *Engine) proseReason(ctx context.Context, m *metric, c *abi.TestCase, dry *dryRun, sc scoring, res *dag.Result, r *results.MetricResult) {
	var steps strings.Builder
	for _, n := range res.Nodes {
		fmt.Fprintf(&steps, "- %s (%s)", n.ID, n.Kind)
		if n.Verdict != "" {
			fmt.Fprintf(&steps, ": verdict %s", n.Verdict)
		}
		if n.Reason != "" {
			fmt.Fprintf(&steps, " — %s", n.Reason)
		}
		steps.WriteString("\n")
	}
	prompt := fmt.Sprintf("An evaluation walked a decision graph for one test case and gave it the score %.2f (0 to 1).\n\n"+
		"Decision path:\n%s\nSummary: %s\n\nIn two sentences at most, explain the score to a developer, citing the decisive step. "+
		`Return only a JSON object {"reason": "<explanation>"}.`, res.Score, steps.String(), res.Reason)
	svc := e.scoringServices(sc, dry)
	resps := svc.Judge(ctx, []abi.JudgeRequest{{
		Messages:   []abi.Message{{Role: "user", Content: prompt}},
		Schema:     json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"],"additionalProperties":false}`),
		SchemaName: "dag_reason", Purpose: "reason", Temperature: new(float64),
	}})
	r.Usage.Merge(svc.spent())
	if resps[0].Error != nil {
		e.logger.Warn("dag prose reason failed; keeping the path summary", "metric", m.key, "case", c.ID, "err", resps[0].Error)
		return
	}
	var out struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(resps[0].JSON, &out) == nil && out.Reason != "" {
		r.Reason = out.Reason + " (path: " + res.Reason + ")"
	}
}

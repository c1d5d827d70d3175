package dag

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

func TestEvaluateBinaryGate(t *testing.T) {
	g := mustGraph(t, `
nodes:
  - id: gate
    kind: binary
    criteria: Does the answer address the question?
    params: [input, actual_output]
    verdicts:
      "true": {score: 10}
      "false": {score: 2}
`)
	tests := []struct {
		verdict   string
		score     float64
		reason    string
		leaves    string
		verdictIn string
	}{
		{"true", 1, "gate=true (score 10/10)", "gate=true:1.0000", "false,true"},
		{"false", 0.2, "gate=false (score 2/10)", "gate=false:0.2000", "false,true"},
	}
	for _, tt := range tests {
		t.Run(tt.verdict, func(t *testing.T) {
			r := &script{verdicts: map[string]string{"gate": tt.verdict}}
			res, err := Evaluate(context.Background(), g, r)
			if err != nil {
				t.Fatal(err)
			}
			if res.Score != tt.score || res.Reason != tt.reason || joined(leafStrings(res.Leaves)) != tt.leaves {
				t.Errorf("score %v reason %q leaves %v", res.Score, res.Reason, leafStrings(res.Leaves))
			}
			if joined(res.Path) != "gate" || len(res.Nodes) != 1 {
				t.Fatalf("path %v nodes %+v", res.Path, res.Nodes)
			}
			n := res.Nodes[0]
			if n.ID != "gate" || n.Kind != "binary" || n.Verdict != tt.verdict || n.Reason != "because gate" || n.Output != "" || n.JudgeCalls != 1 {
				t.Errorf("record %+v", n)
			}
			if got := joined(r.verdictArgs["gate"]); got != tt.verdictIn {
				t.Errorf("verdicts passed = %s", got)
			}
			if res.Totals.JudgeCalls != 1 || res.Totals.InputTokens != 10 || res.Totals.OutputTokens != 2 || res.Totals.USD != 0.001 {
				t.Errorf("totals %+v", res.Totals)
			}
			if res.Error != "" || res.Aggregate != "min" {
				t.Errorf("error %q aggregate %q", res.Error, res.Aggregate)
			}
		})
	}
}

// sharedGraph: two tasks feed b and a shared binary; b leads to a choice c
// whose "meh" leads to the shared node too.
const sharedGraph = `
nodes:
  - id: t1
    kind: task
    instructions: Extract claims.
    output_label: Claims
    params: [actual_output]
    children: [b, shared]
  - id: t2
    kind: task
    instructions: Extract facts.
    output_label: Facts
    params: [context]
    children: [shared]
  - id: b
    kind: binary
    criteria: Any claims?
    verdicts:
      "true": {then: c}
      "false": {score: 0}
  - id: c
    kind: choice
    criteria: How good?
    verdicts:
      meh: {then: shared}
      good: {score: 10}
      bad: {score: 1}
  - id: shared
    kind: binary
    criteria: Claims supported by facts?
    verdicts:
      "true": {score: 8}
      "false": {score: 3}
`

func TestEvaluateSharedNode(t *testing.T) {
	g := mustGraph(t, sharedGraph)
	tests := []struct {
		name     string
		verdicts map[string]string
		calls    string
		path     string
		score    float64
		reason   string
	}{
		{"meh reaches the shared node", map[string]string{"b": "true", "c": "meh", "shared": "true"},
			"b,c,shared,t1,t2", "t1,t2,b,c,shared", 0.8, "t1 → t2 → b=true → c=meh → shared=true (score 8/10)"},
		{"good leaves it dead", map[string]string{"b": "true", "c": "good", "shared": "true"},
			"b,c,t1,t2", "t1,t2,b,c", 1, "t1 → t2 → b=true → c=good (score 10/10)"},
		{"false stops at b", map[string]string{"b": "false"},
			"b,t1,t2", "t1,t2,b", 0, "t1 → t2 → b=false (score 0/10)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &script{verdicts: tt.verdicts, outputs: map[string]string{"t1": "claim A", "t2": "fact B"}}
			res, err := Evaluate(context.Background(), g, r)
			if err != nil {
				t.Fatal(err)
			}
			if got := joined(r.sortedCalls()); got != tt.calls {
				t.Errorf("RunNode calls = %s, want %s (each once)", got, tt.calls)
			}
			if joined(res.Path) != tt.path || res.Score != tt.score || res.Reason != tt.reason {
				t.Errorf("path %v score %v reason %q", res.Path, res.Score, res.Reason)
			}
			if tt.verdicts["c"] == "meh" {
				want := []abi.NodeInput{{NodeID: "t1", Label: "Claims", Output: "claim A"}, {NodeID: "t2", Label: "Facts", Output: "fact B"}}
				if !reflect.DeepEqual(r.inputs["shared"], want) {
					t.Errorf("shared inputs = %+v", r.inputs["shared"])
				}
				if got := joined(r.verdictArgs["c"]); got != "bad,good,meh" {
					t.Errorf("choice verdicts passed = %s, want sorted", got)
				}
				if r.verdictArgs["t1"] != nil {
					t.Errorf("task got verdicts %v", r.verdictArgs["t1"])
				}
				if res.Nodes[0].Output != "claim A" || res.Nodes[0].Verdict != "" {
					t.Errorf("task record %+v", res.Nodes[0])
				}
			}
		})
	}
}

// Two control parents both fire into one node: it still runs once.
func TestEvaluateSharedControlTarget(t *testing.T) {
	g := mustGraph(t, `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [x, y]}
  - {id: x, kind: binary, criteria: c, verdicts: {"true": {then: z}, "false": {score: 0}}}
  - {id: y, kind: regex_match, verdicts: {"true": {then: z}, "false": {score: 5}}}
  - {id: z, kind: binary, criteria: c, params: [input], verdicts: {"true": {score: 9}, "false": {score: 4}}}
`)
	r := &script{verdicts: map[string]string{"x": "true", "y": "true", "z": "false"}}
	res, err := Evaluate(context.Background(), g, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := joined(r.sortedCalls()); got != "t,x,y,z" {
		t.Errorf("calls = %s", got)
	}
	if joined(leafStrings(res.Leaves)) != "z=false:0.4000" || res.Score != 0.4 {
		t.Errorf("leaves %v score %v", leafStrings(res.Leaves), res.Score)
	}
	if r.inputs["z"] != nil {
		t.Errorf("z has no data parents, got inputs %+v", r.inputs["z"])
	}
}

func TestEvaluateChildMetric(t *testing.T) {
	g := mustGraph(t, `
aggregate: mean
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [a, b]}
  - {id: a, kind: binary, criteria: c, verdicts: {"true": {metric: helpfulness}, "false": {score: 0}}}
  - {id: b, kind: choice, criteria: c, verdicts: {x: {metric: helpfulness}, y: {metric: fluency}}}
`)
	r := &script{verdicts: map[string]string{"a": "true", "b": "x"}, metrics: map[string]float64{"helpfulness": 0.75, "fluency": 0.1}}
	res, err := Evaluate(context.Background(), g, r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Score != 0.75 {
		t.Errorf("score = %v", res.Score)
	}
	if got := joined(leafStrings(res.Leaves)); got != "a=true:metric helpfulness 0.7500,b=x:metric helpfulness 0.7500" {
		t.Errorf("leaves = %s", got)
	}
	if r.metricCalls["helpfulness"] != 1 || r.metricCalls["fluency"] != 0 {
		t.Errorf("metric calls = %v: a metric two leaves reach runs once, an unreached one never", r.metricCalls)
	}
	if len(res.Metrics) != 1 || res.Metrics[0].Metric != "helpfulness" || res.Metrics[0].Score != 0.75 || !res.Metrics[0].Success {
		t.Errorf("metrics = %+v", res.Metrics)
	}
	// 3 nodes + 1 metric run.
	if res.Totals.JudgeCalls != 5 || res.Totals.InputTokens != 130 {
		t.Errorf("totals = %+v", res.Totals)
	}
	want := "t → a=true (metric helpfulness 0.75) → b=x (metric helpfulness 0.75); mean of 2 leaves = 0.75"
	if res.Reason != want {
		t.Errorf("reason = %q\nwant %q", res.Reason, want)
	}
}

// The branch not taken costs nothing: a failing gate makes zero further
// RunNode calls.
func TestEvaluateLosingBranchCostsNothing(t *testing.T) {
	g := mustGraph(t, valid)
	r := &script{verdicts: map[string]string{"gate": "false"}, metrics: map[string]float64{"helpfulness": 1}}
	res, err := Evaluate(context.Background(), g, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := joined(r.sortedCalls()); got != "gate" {
		t.Errorf("RunNode calls = %s, want only gate", got)
	}
	if len(r.metricCalls) != 0 {
		t.Errorf("metric calls = %v", r.metricCalls)
	}
	if res.Score != 0 || res.Reason != "gate=false (score 0/10)" || res.Totals.JudgeCalls != 1 {
		t.Errorf("score %v reason %q totals %+v", res.Score, res.Reason, res.Totals)
	}
	if got := joined(r.verdictArgs["gate"]); got != "false,true" {
		t.Errorf("code node verdicts = %s, want the kind's", got)
	}

	// Taking the branch runs it.
	r = &script{verdicts: map[string]string{"gate": "true", "judge": "false"}, metrics: map[string]float64{"helpfulness": 0.5}}
	res, err = Evaluate(context.Background(), g, r)
	if err != nil {
		t.Fatal(err)
	}
	if joined(r.sortedCalls()) != "extract,gate,judge" || res.Score != 0.5 {
		t.Errorf("calls %v score %v", r.sortedCalls(), res.Score)
	}
	if res.Reason != "gate=true → extract → judge=false (metric helpfulness 0.50)" {
		t.Errorf("reason %q", res.Reason)
	}
}

const threeJudges = `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [c, a, b]}
  - {id: a, kind: binary, criteria: c, verdicts: {"true": {score: 2}, "false": {score: 0}}}
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {score: 6}, "false": {score: 0}}}
  - {id: c, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
`

func TestEvaluateAggregation(t *testing.T) {
	tests := []struct {
		aggregate string
		want      float64
	}{
		{"", 0.2},
		{"min", 0.2},
		{"mean", (0.2 + 0.6 + 1.0) / 3},
		{"max", 1},
	}
	for _, tt := range tests {
		t.Run("aggregate="+tt.aggregate, func(t *testing.T) {
			src := threeJudges
			if tt.aggregate != "" {
				src = "aggregate: " + tt.aggregate + "\n" + src
			}
			g := mustGraph(t, src)
			r := &script{verdicts: map[string]string{"a": "true", "b": "true", "c": "true"}}
			res, err := Evaluate(context.Background(), g, r)
			if err != nil {
				t.Fatal(err)
			}
			if res.Score != tt.want {
				t.Errorf("score = %v, want %v", res.Score, tt.want)
			}
			if got := joined(leafStrings(res.Leaves)); got != "a=true:0.2000,b=true:0.6000,c=true:1.0000" {
				t.Errorf("leaves = %s (sorted by node id)", got)
			}
			// Path is topological, ties by configuration order: a, b, c as configured.
			if joined(res.Path) != "t,a,b,c" {
				t.Errorf("path = %v", res.Path)
			}
		})
	}
}

// TestEvaluateDeterministicMean: mean of floats whose sum depends on order
// must not depend on completion order.
func TestEvaluateDeterministicMean(t *testing.T) {
	g := mustGraph(t, `
aggregate: mean
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [p, q, r, s]}
  - {id: p, kind: binary, criteria: c, verdicts: {"true": {score: 0.1}, "false": {score: 0}}}
  - {id: q, kind: binary, criteria: c, verdicts: {"true": {score: 0.2}, "false": {score: 0}}}
  - {id: r, kind: binary, criteria: c, verdicts: {"true": {score: 0.3}, "false": {score: 0}}}
  - {id: s, kind: binary, criteria: c, verdicts: {"true": {metric: m1}, "false": {score: 0}}}
`)
	// The sum in sorted leaf order (p, q, r, s), in float64 arithmetic.
	p, q, rr, s := 0.1, 0.2, 0.3, 1e-17
	want := (((p/10 + q/10) + rr/10) + s) / 4
	if alt := (((s + rr/10) + q/10) + p/10) / 4; alt == want {
		t.Fatalf("test data does not tell orders apart")
	}
	for i := 0; i < 50; i++ {
		r := &releasing{script: script{verdicts: map[string]string{"p": "true", "q": "true", "r": "true", "s": "true"},
			metrics: map[string]float64{"m1": 1e-17}}, order: i}
		res, err := Evaluate(context.Background(), g, r, WithConcurrency(8))
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(res.Score) != math.Float64bits(want) {
			t.Fatalf("run %d: score %.20g, want %.20g", i, res.Score, want)
		}
	}
}

// releasing finishes the four judges in an order that depends on order,
// each waiting for its predecessor in that order.
type releasing struct {
	script
	order int
	once  sync.Once
	gates map[string]chan struct{}
	seq   []string
}

func (r *releasing) RunNode(ctx context.Context, n *Node, in []abi.NodeInput, v []string) (NodeOutcome, error) {
	r.once.Do(func() {
		perms := [][]string{{"p", "q", "r", "s"}, {"s", "r", "q", "p"}, {"q", "s", "p", "r"}, {"r", "p", "s", "q"}}
		r.seq = perms[r.order%len(perms)]
		r.gates = map[string]chan struct{}{}
		for _, id := range r.seq {
			r.gates[id] = make(chan struct{})
		}
		close(r.gates[r.seq[0]])
	})
	if gate, ok := r.gates[n.ID]; ok {
		<-gate
		defer func() {
			for i, id := range r.seq {
				if id == n.ID && i+1 < len(r.seq) {
					close(r.gates[r.seq[i+1]])
				}
			}
		}()
	}
	return r.script.RunNode(ctx, n, in, v)
}

func TestEvaluateNodeError(t *testing.T) {
	g := mustGraph(t, `
nodes:
  - {id: r, kind: binary, criteria: c, params: [input], verdicts: {"true": {then: x}, "false": {score: 0}}}
  - {id: x, kind: task, instructions: x, params: [input], children: [y]}
  - {id: y, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}
`)
	boom := errors.New("judge unreachable")
	r := &script{verdicts: map[string]string{"r": "true"}, fail: map[string]error{"x": boom}}
	res, err := Evaluate(context.Background(), g, r)
	var ne *NodeError
	if !errors.As(err, &ne) || ne.NodeID != "x" || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want a NodeError for x wrapping boom", err)
	}
	if err.Error() != `node "x": judge unreachable` || res.Error != err.Error() {
		t.Errorf("err %q, res.Error %q", err, res.Error)
	}
	if joined(res.Path) != "r,x" || res.Nodes[1].Error != "judge unreachable" || res.Score != 0 {
		t.Errorf("path %v nodes %+v score %v", res.Path, res.Nodes, res.Score)
	}
	if joined(r.sortedCalls()) != "r,x" {
		t.Errorf("calls %v", r.sortedCalls())
	}
	if res.Reason != "r=true → x (failed)" {
		t.Errorf("reason %q", res.Reason)
	}
}

// A failure stops new work but waits for nodes already running and keeps
// their records.
func TestEvaluateErrorWaitsForRunning(t *testing.T) {
	g := mustGraph(t, `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [a, b]}
  - {id: a, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {then: after}, "false": {score: 0}}}
  - {id: after, kind: binary, criteria: c, params: [input], verdicts: {"true": {score: 1}, "false": {score: 0}}}
`)
	bStarted := make(chan struct{})
	releaseB := make(chan struct{})
	aHandled := make(chan struct{})
	r := &script{
		verdicts: map[string]string{"b": "true", "after": "true"},
		fail:     map[string]error{"a": errors.New("a broke")},
	}
	r.hook = func(id string) {
		switch id {
		case "a":
			<-bStarted // fail only once b is running
		case "b":
			close(bStarted)
			<-releaseB
		}
	}
	hook := func(o *options) {
		o.completed = func(node, _ string) {
			if node == "a" {
				close(aHandled)
			}
		}
	}
	type out struct {
		res *Result
		err error
	}
	done := make(chan out)
	go func() {
		res, err := Evaluate(context.Background(), g, r, WithConcurrency(2), hook)
		done <- out{res, err}
	}()
	<-aHandled
	// a's failure is handled while b runs: Evaluate must still wait for b.
	select {
	case o := <-done:
		t.Fatalf("Evaluate returned before b finished: %v", o.err)
	default:
	}
	close(releaseB)
	o := <-done
	if o.err == nil || !strings.Contains(o.err.Error(), `node "a": a broke`) {
		t.Fatalf("err = %v", o.err)
	}
	if joined(o.res.Path) != "t,a,b" {
		t.Errorf("path = %v: b's record kept, after never started", o.res.Path)
	}
	if got := joined(r.sortedCalls()); got != "a,b,t" {
		t.Errorf("calls = %s", got)
	}
}

func TestEvaluateErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		r     *script
		want  string
		path  string
		calls string
	}{
		{"verdict outside the set", valid,
			&script{verdicts: map[string]string{"gate": "maybe"}},
			`node "gate": verdict "maybe" is not one of "false", "true"`, "gate", "gate"},
		{"node result error", valid,
			&script{verdicts: map[string]string{"gate": "true"}, fail: map[string]error{"extract": abi.Errorf(abi.CodeMissingField, "case has no actual_output")}},
			`node "extract": missing_field: case has no actual_output`, "gate,extract", "extract,gate"},
		{"child metric error", valid,
			&script{verdicts: map[string]string{"gate": "true", "judge": "false"}, fail: map[string]error{"metric:helpfulness": errors.New("judge down")}},
			`node "judge": child metric "helpfulness": judge down`, "gate,extract,judge", "extract,gate,judge"},
		{"child metric score out of range", valid,
			&script{verdicts: map[string]string{"gate": "true", "judge": "false"}, metrics: map[string]float64{"helpfulness": 7}},
			`node "judge": child metric "helpfulness": score 7 is outside [0,1]`, "gate,extract,judge", "extract,gate,judge"},
		// Every verdict here can reach a score, so the graph validates
		// (TestValidateLeafReach), but a's "true" needs b's "true" and a's
		// "false" needs b's "false": the crossed answers fire no leaf.
		{"no leaf fired", `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [a, b]}
  - {id: a, kind: binary, criteria: c, verdicts: {"true": {then: x}, "false": {then: y}}}
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {then: d1}, "false": {then: d2}}}
  - {id: d1, kind: task, instructions: y, params: [input], children: [x]}
  - {id: d2, kind: task, instructions: y, params: [input], children: [y]}
  - {id: x, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
  - {id: y, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
`, &script{verdicts: map[string]string{"a": "true", "b": "false"}},
			"dag: no leaf fired: ran t, a=true, b=false, d2; dead (not reached): d1, x, y", "t,a,b,d2", "a,b,d2,t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustGraph(t, tt.src)
			res, err := Evaluate(context.Background(), g, tt.r)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			if res == nil || res.Error != tt.want || joined(res.Path) != tt.path || res.Score != 0 {
				t.Errorf("result %+v", res)
			}
			if got := joined(tt.r.sortedCalls()); got != tt.calls {
				t.Errorf("calls = %s, want %s", got, tt.calls)
			}
		})
	}
}

func TestEvaluateCancelled(t *testing.T) {
	g := mustGraph(t, valid)
	ctx, cancel := context.WithCancel(context.Background())
	r := &script{verdicts: map[string]string{"gate": "true"}}
	r.hook = func(id string) {
		if id == "gate" {
			cancel()
		}
	}
	res, err := Evaluate(ctx, g, r)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if joined(res.Path) != "gate" || joined(r.sortedCalls()) != "gate" {
		t.Errorf("path %v calls %v", res.Path, r.sortedCalls())
	}
}

func TestEvaluateRunnerPanics(t *testing.T) {
	g := mustGraph(t, valid)
	r := &script{}
	r.hook = func(string) { panic("oops") }
	_, err := Evaluate(context.Background(), g, r)
	if err == nil || err.Error() != `node "gate": runner panicked: oops` {
		t.Fatalf("err = %v", err)
	}
}

func TestEvaluateConcurrencyCap(t *testing.T) {
	src := "nodes:\n  - {id: t, kind: task, instructions: x, params: [input], children: [a, b, c, d, e, f]}\n"
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		src += "  - {id: " + id + `, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}` + "\n"
	}
	g := mustGraph(t, src)
	for _, limit := range []int{1, 2, 4} {
		var cur, peak atomic.Int32
		arrived := make(chan struct{}, 6)
		release := make(chan struct{})
		r := &script{verdicts: map[string]string{"a": "true", "b": "true", "c": "true", "d": "true", "e": "true", "f": "true"}}
		r.hook = func(id string) {
			if id == "t" {
				return
			}
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			arrived <- struct{}{}
			<-release
			cur.Add(-1)
		}
		done := make(chan error)
		go func() {
			_, err := Evaluate(context.Background(), g, r, WithConcurrency(limit))
			done <- err
		}()
		// Wait until the first `limit` judges are running, then let all go.
		for i := 0; i < limit; i++ {
			<-arrived
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := peak.Load(); got != int32(limit) {
			t.Errorf("limit %d: peak concurrency %d", limit, got)
		}
	}
}

func TestResultJSON(t *testing.T) {
	g := mustGraph(t, valid)
	r := &script{verdicts: map[string]string{"gate": "true", "judge": "true"}}
	res, err := Evaluate(context.Background(), g, r)
	if err != nil {
		t.Fatal(err)
	}
	res.WallMS = 0
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"score", "aggregate", "reason", "path", "leaves", "nodes", "totals", "wall_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result JSON lacks %q: %s", k, b)
		}
	}
	node := m["nodes"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "kind", "verdict", "reason", "judge_calls", "input_tokens", "output_tokens", "usd", "latency_ms"} {
		if _, ok := node[k]; !ok {
			t.Errorf("node JSON lacks %q: %v", k, node)
		}
	}
	leaf := m["leaves"].([]any)[0].(map[string]any)
	if leaf["node_id"] != "judge" || leaf["verdict"] != "true" || leaf["points"] != 10.0 {
		t.Errorf("leaf JSON %v", leaf)
	}
}

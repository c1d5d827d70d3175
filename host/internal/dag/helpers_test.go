package dag

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// testEnv has the built-in kinds, two code gates, an output-producing
// plugin kind and a metric kind.
func testEnv() Env {
	node := func(name string, verdicts []string, fields ...string) abi.KindDescriptor {
		return abi.KindDescriptor{Name: name, Role: abi.RoleNode, Verdicts: verdicts, RequiredFields: fields}
	}
	return Env{
		NodeKinds: map[string]abi.KindDescriptor{
			KindTask:      node(KindTask, nil),
			KindBinary:    node(KindBinary, nil),
			KindChoice:    node(KindChoice, nil),
			"json_valid":  node("json_valid", []string{"false", "true"}, abi.FieldActualOutput),
			"regex_match": node("regex_match", []string{"false", "true"}),
			"traffic":     node("traffic", []string{"red", "amber", "green"}),
			"summarise":   node("summarise", nil, "notes"),
			"geval":       {Name: "geval", Role: abi.RoleMetric},
		},
		Metrics: map[string]bool{"helpfulness": true, "fluency": true, "m1": true, "m2": true},
		Self:    "quality",
	}
}

// mustGraph parses and validates YAML, failing the test on any error.
func mustGraph(t testing.TB, src string) *Graph {
	t.Helper()
	spec, err := ParseYAML([]byte(src), "test.yaml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	g, _, err := Validate(spec, testEnv())
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	return g
}

// script is a Runner answering from tables and recording every call.
type script struct {
	verdicts map[string]string  // node id → verdict
	outputs  map[string]string  // node id → output (default "out:<id>")
	metrics  map[string]float64 // metric → score
	fail     map[string]error   // node id or "metric:<name>" → error
	// hook, if set, runs at the start of every RunNode call.
	hook func(id string)

	mu          sync.Mutex
	calls       []string
	inputs      map[string][]abi.NodeInput
	verdictArgs map[string][]string
	metricCalls map[string]int
}

func (s *script) RunNode(_ context.Context, n *Node, inputs []abi.NodeInput, verdicts []string) (NodeOutcome, error) {
	if s.hook != nil {
		s.hook(n.ID)
	}
	s.mu.Lock()
	s.calls = append(s.calls, n.ID)
	if s.inputs == nil {
		s.inputs = map[string][]abi.NodeInput{}
		s.verdictArgs = map[string][]string{}
	}
	s.inputs[n.ID] = inputs
	s.verdictArgs[n.ID] = verdicts
	s.mu.Unlock()
	if err := s.fail[n.ID]; err != nil {
		return NodeOutcome{}, err
	}
	out := NodeOutcome{Usage: Usage{JudgeCalls: 1, InputTokens: 10, OutputTokens: 2, USD: 0.001, LatencyMS: 5}}
	if n.Class.Produces() {
		out.Output = "out:" + n.ID
		if o, ok := s.outputs[n.ID]; ok {
			out.Output = o
		}
		return out, nil
	}
	out.Verdict = s.verdicts[n.ID]
	out.Reason = "because " + n.ID
	return out, nil
}

func (s *script) RunMetric(_ context.Context, metric string) (MetricOutcome, error) {
	s.mu.Lock()
	if s.metricCalls == nil {
		s.metricCalls = map[string]int{}
	}
	s.metricCalls[metric]++
	s.mu.Unlock()
	if err := s.fail["metric:"+metric]; err != nil {
		return MetricOutcome{}, err
	}
	score, ok := s.metrics[metric]
	if !ok {
		return MetricOutcome{}, fmt.Errorf("no score scripted for %s", metric)
	}
	return MetricOutcome{Score: score, Success: score >= 0.5, Reason: "scripted",
		Usage: Usage{JudgeCalls: 2, InputTokens: 100, OutputTokens: 20, USD: 0.01, LatencyMS: 50}}, nil
}

func (s *script) sortedCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := slices.Clone(s.calls)
	slices.Sort(c)
	return c
}

func leafStrings(ls []Leaf) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		if l.Metric != "" {
			out[i] = fmt.Sprintf("%s=%s:metric %s %.4f", l.NodeID, l.Verdict, l.Metric, l.Score)
		} else {
			out[i] = fmt.Sprintf("%s=%s:%.4f", l.NodeID, l.Verdict, l.Score)
		}
	}
	return out
}

func joined(ss []string) string { return strings.Join(ss, ",") }

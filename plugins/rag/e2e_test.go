//go:build !wasip1

// The end-to-end tests link the host (SQLite included), which does not
// build for wasip1, where scripts/test vets this package's guest code.

package rag_test

import (
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/judgetest"
	"github.com/agentanvil/anvil/plugins/internal/hosted"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

// TestContextKindsEndToEnd runs each retrieval-context kind through the
// host (config, engine, judge client, OpenAI wire) against the fake judge
// server: one structured-output request per case, the count bound in its
// schema, the reply decoded from the wire and scored by the formula.
func TestContextKindsEndToEnd(t *testing.T) {
	srv := judgetest.New(t)
	srv.On(judgetest.ContainsMessage("in rank order (node 1 ranked highest)"), hosted.Reply(scripted.Verdicts("no:About cafés.", "yes", "yes")))
	srv.On(judgetest.ContainsMessage("Split the expected output into its sentences"), hosted.Reply(map[string]any{"verdicts": []map[string]string{
		{"sentence": "The tower was completed in 1889.", "verdict": "yes", "reason": "[2]"},
		{"sentence": "It is 330 m tall.", "verdict": "no", "reason": "No height."},
	}}))
	srv.On(judgetest.ContainsMessage("break the node into the statements"), hosted.Reply(map[string]any{"nodes": []map[string]any{
		{"statements": []map[string]string{{"statement": "Paris has many cafés.", "verdict": "no", "reason": "Cafés."}}},
		{"statements": []map[string]string{{"statement": "The tower was completed in 1889.", "verdict": "yes", "reason": ""}}},
		{"statements": []map[string]string{{"statement": "It stands in Paris.", "verdict": "yes", "reason": ""}, {"statement": "It is iron.", "verdict": "no", "reason": "Material."}}},
	}}))
	srv.On(judgetest.ContainsMessage("each a piece of ground truth"), hosted.Reply(scripted.Verdicts("no:1899, not 1889.", "yes")))

	res := hosted.Evaluate(t, srv, `  - {name: precision, kind: contextual_precision, threshold: 0.5}
  - {name: recall, kind: contextual_recall, threshold: 0.6}
  - {name: relevancy, kind: contextual_relevancy, threshold: 0.5}
  - {name: hallucination, kind: hallucination, threshold: 0.6}
`, abi.TestCase{ID: "eiffel", Input: "When was the Eiffel Tower finished?",
		ActualOutput:     "It was finished in 1899.",
		ExpectedOutput:   "The tower was completed in 1889. It is 330 m tall.",
		RetrievalContext: []string{"Paris has many cafés.", "The Eiffel Tower was completed in 1889.", "It stands in Paris and is made of iron."},
		Context:          []string{"The Eiffel Tower was completed in 1889.", "The Eiffel Tower is in Paris."},
	})
	if len(res.Cases) != 1 {
		t.Fatalf("%d cases", len(res.Cases))
	}
	want := map[string]struct {
		score  float64
		status string
		detail string
	}{
		// Useful nodes at ranks 2 and 3: (1/2 + 2/3) / 2 = 7/12.
		"precision": {7.0 / 12, "passed", `"formula":"Σ precision@k over useful nodes / useful = (1/2 + 2/3) / 2 = 0.5833"`},
		"recall":    {0.5, "failed", `"formula":"yes / n = 1 / 2 = 0.5"`},
		"relevancy": {0.5, "passed", `"node":3`},
		// One contradicted context of two: rate 0.5, score 0.5.
		"hallucination": {0.5, "failed", `"hallucination_rate":0.5`},
	}
	for _, m := range res.Cases[0].Metrics {
		w, ok := want[m.Metric]
		if !ok {
			t.Errorf("unexpected metric %s", m.Metric)
			continue
		}
		if m.Score == nil || !near(*m.Score, w.score) || m.Status != w.status || !strings.Contains(string(m.Details), w.detail) || m.Usage.Calls != 1 {
			t.Errorf("%s: score %v status %s calls %d error %v details %s", m.Metric, m.Score, m.Status, m.Usage.Calls, m.Error, m.Details)
		}
		delete(want, m.Metric)
	}
	if len(want) != 0 {
		t.Errorf("metrics missing: %v", want)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want one per metric", len(reqs))
	}
	names := map[string]string{}
	for _, r := range reqs {
		if r.ResponseFormat == nil || r.ResponseFormat.Type != "json_schema" || r.ResponseFormat.JSONSchema == nil || r.Temperature == nil || *r.Temperature != 0 {
			t.Fatalf("request %d: response_format %+v temperature %v", r.Seq, r.ResponseFormat, r.Temperature)
		}
		names[r.ResponseFormat.JSONSchema.Name] = string(r.ResponseFormat.JSONSchema.Schema)
	}
	for name, bound := range map[string]string{"rag_node_verdicts": `"minItems":3`, "rag_sentence_verdicts": `"minItems":1`,
		"rag_node_statements": `"minItems":3`, "rag_context_verdicts": `"minItems":2`} {
		if !strings.Contains(names[name], bound) {
			t.Errorf("schema %s = %s, want %s", name, names[name], bound)
		}
	}
}

// TestMiscountRepairedEndToEnd: through the host, a verdict list longer
// than the nodes breaks the schema's maxItems, so the judge layer repairs
// it (one more call, naming the bound) before the kind sees a reply.
func TestMiscountRepairedEndToEnd(t *testing.T) {
	srv := judgetest.New(t)
	srv.SetDefault(judgetest.Sequence(
		judgetest.Reply{Content: `{"verdicts":[{"verdict":"yes","reason":""},{"verdict":"no","reason":""},{"verdict":"yes","reason":""}]}`},
		judgetest.Reply{Content: `{"verdicts":[{"verdict":"no","reason":"x"},{"verdict":"yes","reason":""}]}`},
	))
	res := hosted.Evaluate(t, srv, "  - {name: precision, kind: contextual_precision, threshold: 0.5}\n",
		abi.TestCase{ID: "c", Input: "Q?", ExpectedOutput: "A.", RetrievalContext: []string{"N1.", "N2."}})
	m := res.Cases[0].Metrics[0]
	// The repaired verdicts: the useful node at rank 2, 1/2.
	if m.Score == nil || *m.Score != 0.5 || srv.Calls() != 2 {
		t.Fatalf("score %v error %v, %d calls", m.Score, m.Error, srv.Calls())
	}
	reqs := srv.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1].Content
	if !strings.Contains(last, "maxItems") && !strings.Contains(last, "at most 2") && !strings.Contains(last, "maximum 2") {
		t.Errorf("the repair does not name the bound: %q", last)
	}
}

package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/enginetest"
	"github.com/agentanvil/anvil/host/judgetest"
)

// everyKindJudge answers every first-party kind by the name of the schema
// it sends (json_schema mode), so no reply needs a repair: G-Eval steps and
// scores, three statements / claims / truths with three verdicts, and the
// DAG path task → true → formal, the path estimate's dry run takes. What a
// reply extracts carries a fingerprint of its request, so the requests
// built from it differ between cases: identical requests in flight
// together would share one call, which no estimate can foresee.
func everyKindJudge(t *testing.T) *judgetest.Server {
	t.Helper()
	s := judgetest.New(t)
	s.SetDefault(judgetest.ReplyFunc(func(r judgetest.RecordedRequest) judgetest.Reply {
		sum := sha256.Sum256([]byte(r.LastMessage()))
		fp := hex.EncodeToString(sum[:4])
		three := func(key string) judgetest.Reply {
			return judgetest.Reply{Content: fmt.Sprintf(`{%q: ["One %s.", "Two %s.", "Three %s."]}`, key, fp, fp, fp)}
		}
		name := ""
		if r.ResponseFormat != nil && r.ResponseFormat.JSONSchema != nil {
			name = r.ResponseFormat.JSONSchema.Name
		}
		switch name {
		case "geval_steps":
			return judgetest.Reply{Content: `{"steps": ["Compare the facts.", "Check agreement.", "Penalise contradictions."]}`}
		case "geval_score":
			return judgetest.JSONScoreReply("Agrees.", "8", map[string]float64{"8": .7, "7": .2, "9": .1})
		case "rag_statements":
			return three("statements")
		case "rag_claims":
			return three("claims")
		case "rag_truths":
			return three("truths")
		case "rag_verdicts":
			return judgetest.Reply{Content: `{"verdicts": [{"verdict": "yes", "reason": "a"}, {"verdict": "yes", "reason": "b"}, {"verdict": "no", "reason": "c"}]}`}
		case "rag_node_verdicts", "rag_context_verdicts":
			return judgetest.Reply{Content: `{"verdicts": [{"verdict": "yes", "reason": "a"}]}`}
		case "rag_sentence_verdicts":
			return judgetest.Reply{Content: `{"verdicts": [{"sentence": "S.", "verdict": "yes", "reason": "a"}, {"sentence": "T.", "verdict": "no", "reason": "b"}]}`}
		case "rag_node_statements":
			return judgetest.Reply{Content: `{"nodes": [{"statements": [{"statement": "S.", "verdict": "yes", "reason": ""}]}]}`}
		case "content_bias", "content_toxicity":
			return judgetest.Reply{Content: `{"opinions": [{"opinion": "O.", "verdict": "no", "reason": ""}]}`}
		case "content_pii_leakage":
			return judgetest.Reply{Content: `{"statements": []}`}
		case "content_prompt_alignment", "agent_argument_verdicts":
			return judgetest.Reply{Content: `{"verdicts": [{"verdict": "yes", "reason": ""}, {"verdict": "no", "reason": "x"}]}`}
		case "content_claims":
			return three("claims")
		case "content_questions":
			return judgetest.Reply{Content: `{"questions": ["Q1?", "Q2?"]}`}
		case "content_answers":
			return judgetest.Reply{Content: `{"answers": ["yes", "idk"]}`}
		case "content_summary_verdicts":
			return judgetest.Reply{Content: `{"verdicts": [{"verdict": "yes", "reason": ""}, {"verdict": "idk", "reason": "x"}, {"verdict": "yes", "reason": ""}]}`}
		case "agent_task":
			return judgetest.Reply{Content: `{"task": "T.", "outcome": "O.", "score": 0.5, "reason": "R."}`}
		case "dag_task":
			return judgetest.Reply{Content: fmt.Sprintf(`{"output": "C1 (%s): refund window is 30 days"}`, fp)}
		case "dag_binary":
			return judgetest.Reply{Content: `{"reason": "Supported.", "verdict": true}`}
		case "dag_choice":
			return judgetest.Reply{Content: `{"reason": "Precise.", "verdict": "formal"}`}
		}
		t.Errorf("unexpected judge request (response_format %+v): %s", r.ResponseFormat, r.LastMessage())
		return judgetest.Reply{Status: 400, ErrorMessage: "unscripted"}
	}))
	return s
}

const ragCases = `{"id": "r1", "input": "Refund window?", "actual_output": "Refunds within 30 days, with a receipt, by mail.", "retrieval_context": ["Refunds are accepted within 30 days."]}
{"id": "r2", "input": "Shipping?", "actual_output": "Free over $50, two days, tracked.", "retrieval_context": ["Shipping is free over $50."]}
{"id": "r3", "input": "Support hours?", "actual_output": "9 to 5, weekdays, by phone.", "retrieval_context": ["Support: 9-5 on weekdays."]}
`

// ctxCases have one retrieval-context node and one context each.
const ctxCases = `{"id": "r1", "input": "Refund window?", "actual_output": "Refunds within 30 days.", "expected_output": "30 days.", "retrieval_context": ["Refunds are accepted within 30 days."], "context": ["Refunds: 30 days."]}
{"id": "r2", "input": "Shipping?", "actual_output": "Free over $50.", "expected_output": "Free over $50.", "retrieval_context": ["Shipping is free over $50."], "context": ["Free shipping over $50."]}
{"id": "r3", "input": "Support hours?", "actual_output": "9 to 5.", "expected_output": "9-5 on weekdays.", "retrieval_context": ["Support: 9-5 on weekdays."], "context": ["Support hours: 9-5."]}
`

const ctxMetrics = `  - {name: precision, kind: contextual_precision, threshold: 0.5}
  - {name: recall, kind: contextual_recall, threshold: 0.5}
  - {name: relevancy, kind: contextual_relevancy, threshold: 0.5}
  - {name: hallucination, kind: hallucination, threshold: 0.5}
`

// catalogCases have what the content and agent kinds read: two tool calls
// each (argument_correctness bounds its verdicts to them).
const catalogCases = `{"id": "k1", "input": "Refund window?", "actual_output": "Refunds within 30 days.", "tools_called": [{"name": "policy", "arguments": {"q": "refund"}}, {"name": "noop"}]}
{"id": "k2", "input": "Shipping?", "actual_output": "Free over $50.", "tools_called": [{"name": "policy", "arguments": {"q": "shipping"}}, {"name": "noop"}]}
`

// catalogMetrics: the estimate's sample replies keep to each schema's
// count bounds (prompt_alignment's two instructions, summarization's two
// questions, argument_correctness's two calls), so it predicts no repair.
const catalogMetrics = `  - {name: bias, kind: bias, threshold: 0.5}
  - {name: toxicity, kind: toxicity, threshold: 0.5}
  - {name: pii, kind: pii_leakage, threshold: 0.5}
  - {name: aligned, kind: prompt_alignment, threshold: 0.5, params: {prompt_instructions: [Be brief., Be polite.]}}
  - {name: summary, kind: summarization, threshold: 0.5, params: {n: 2}}
  - {name: args, kind: argument_correctness, threshold: 0.5}
  - {name: done, kind: task_completion, threshold: 0.5}
`

const sampledGEval = `  - name: sampled
    kind: geval
    threshold: 0.5
    params:
      criteria: Is the actual output correct given the expected output?
      evaluation_params: [input, actual_output, expected_output]
      samples: 3
`

const ragMetrics = `  - name: relevancy
    kind: answer_relevancy
    threshold: 0.5
  - name: faithful
    kind: faithfulness
    threshold: 0.5
    params: {extract_truths: true}
`

func estimateOf(t *testing.T, e env) *engine.EstimateReport {
	t.Helper()
	cfg, err := config.Load(filepath.Join(e.dir, "anvil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{
		Cache: "off", StorePath: e.store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: enginetest.Getenv,
	}
	engine.WithSampleWindow(&opts, time.Hour)
	eng, err := engine.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	rep, err := eng.Estimate(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// wantRowsSumToTotal checks the estimate's one arithmetic promise.
func wantRowsSumToTotal(t *testing.T, rep *engine.EstimateReport) {
	t.Helper()
	var sum engine.Estimate
	for _, m := range rep.Metrics {
		sum.JudgeCalls += m.JudgeCalls
		sum.CachedCalls += m.CachedCalls
		sum.InputTokens += m.InputTokens
		sum.OutputTokens += m.OutputTokens
		sum.Refused += m.Refused
	}
	tot := rep.Total
	if sum.JudgeCalls != tot.JudgeCalls || sum.CachedCalls != tot.CachedCalls || sum.InputTokens != tot.InputTokens ||
		sum.OutputTokens != tot.OutputTokens || sum.Refused != tot.Refused {
		t.Errorf("rows sum to %+v; total is %+v", sum, tot)
	}
}

// TestEstimateCallsAreTheCallsARunMakes: estimate's judge calls equal the
// completions a cold run with the cache off makes at the server, for every
// kind of metric (replies that need no repair, which no estimate predicts).
func TestEstimateCallsAreTheCallsARunMakes(t *testing.T) {
	tests := []struct {
		name     string
		logprobs bool
		metrics  string
		cases    string
		want     int
	}{
		// 1 steps call in prepare + 3 scored cases (c4 lacks expected_output).
		{"geval criteria only", true, correctness, cases, 1 + 3},
		// A judge without logprobs samples each score: 3 calls a case.
		{"geval samples without logprobs", false, sampledGEval, cases, 1 + 3*3},
		// Relevancy: statements + verdicts; faithfulness: claims and truths
		// in one batch + verdicts.
		{"answer_relevancy and faithfulness", true, ragMetrics, ragCases, 3*2 + 3*3},
		// One verdict call a case each; the estimate's sample reply keeps
		// to the schemas' one-per-node bound, so it predicts no repair.
		{"retrieval-context kinds", true, ctxMetrics, ctxCases, 3 * 4},
		// One call a case each; summarization: claims + questions, then
		// two answer calls and the alignment verdicts.
		{"content and agent kinds", true, catalogMetrics, catalogCases, 2 * (1 + 1 + 1 + 1 + 5 + 1 + 1)},
		// task → binary (true) → choice, on both cases.
		{"dag", true, sharedNodeDAG, dagCases, 2 * 3},
		// samples: N multiplies every scoring call (not G-Eval's steps).
		{"geval samples: 3", true, addSamples(correctness, 3), cases, 1 + 3*3},
		{"geval samples: 2 of a sampled score", false, addSamples(sampledGEval, 2), cases, 1 + 2*3*3},
		{"statement metrics samples: 2", true, addSamples(ragMetrics, 2), ragCases, 2 * (3*2 + 3*3)},
		{"dag samples: 2", true, addSamples(sharedNodeDAG, 2), dagCases, 2 * 2 * 3},
		// A judge with n: the samples' alike requests are one call. Each
		// step of these kinds is asked alike by every sample (the fake
		// judge answers them alike), so samples cost no extra call.
		{"geval samples: 3, supports_n", true, withN(addSamples(correctness, 3)), cases, 1 + 3},
		{"statement metrics samples: 2, supports_n", true, withN(addSamples(ragMetrics, 2)), ragCases, 3*2 + 3*3},
		{"dag samples: 2, supports_n", true, withN(addSamples(sharedNodeDAG, 2)), dagCases, 2 * 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := everyKindJudge(t)
			e := newEnv(t, configWithN(configFor(srv.URL(), tc.logprobs, strings.TrimPrefix(tc.metrics, nMarker)), strings.HasPrefix(tc.metrics, nMarker)))
			writeFiles(t, e.dir, map[string]string{"cases.jsonl": tc.cases})

			rep := estimateOf(t, e)
			if srv.Calls() != 0 {
				t.Fatalf("estimate called the judge %d times", srv.Calls())
			}
			wantRowsSumToTotal(t, rep)

			s := e.run(t, "off", engine.RunOptions{})
			if got := srv.Calls(); rep.Total.JudgeCalls != got || got != tc.want {
				t.Errorf("estimate says %d judge calls, the run made %d; want both %d", rep.Total.JudgeCalls, got, tc.want)
			}
			// Row by row too: a metric's row counts its steps call in
			// both, not in the total alone.
			estimated := map[string]int{}
			for _, m := range rep.Metrics {
				estimated[m.Metric] = m.JudgeCalls
			}
			for _, m := range s.Metrics {
				if m.Judge.Calls != estimated[m.Metric] {
					t.Errorf("metric %s: the run's row says %d judge calls, estimate's %d", m.Metric, m.Judge.Calls, estimated[m.Metric])
				}
			}
			if rep.Total.InputTokens == 0 || rep.Total.OutputTokens == 0 || rep.Total.USD <= 0 {
				t.Errorf("total = %+v; want tokens and USD", rep.Total)
			}
		})
	}
}

func TestEstimateSaysWhatItDoesNotPredict(t *testing.T) {
	srv := everyKindJudge(t)
	e := newEnv(t, configFor(srv.URL(), true, correctness))
	rep := estimateOf(t, e)
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"upstream completions", "repair", "sample top-up", "json_schema", "not predicted", "150 tokens"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestEstimateCountsRequestsTooLargeAsRefused(t *testing.T) {
	srv := everyKindJudge(t)
	cfg := strings.Replace(configFor(srv.URL(), true, correctness), "    model: judge-model\n", "    model: judge-model\n    max_input_tokens: 60\n", 1)
	e := newEnv(t, cfg)
	rep := estimateOf(t, e)
	m := rep.Metrics[0]
	// Even the steps request is over 60 tokens: prepare is refused, and
	// every case carries its error.
	if m.JudgeCalls != 0 || m.Cases != 4 || m.Refused != 4 || !strings.Contains(m.Note, "request_too_large") {
		t.Errorf("estimate = %+v; want no calls, 4 refused cases, a note naming request_too_large", m)
	}
	wantRowsSumToTotal(t, rep)
	e.run(t, "off", engine.RunOptions{})
	if srv.Calls() != 0 {
		t.Errorf("the run sent %d requests larger than max_input_tokens", srv.Calls())
	}
}

// addSamples gives every metric of a metrics block samples: n.
func addSamples(metrics string, n int) string {
	lines := strings.SplitAfter(metrics, "\n")
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		if strings.HasPrefix(l, "    kind: ") {
			fmt.Fprintf(&b, "    samples: %d\n", n)
		}
	}
	return b.String()
}

// A panel is priced as the calls it makes: each judge scores every case,
// and its row names the panel.
func TestEstimatePricesAPanel(t *testing.T) {
	srv := panelJudge(t)
	e := newEnv(t, panelConfig(srv.URL(), strings.Replace(panelMetric("median", 0.5), "    kind: geval\n", "    kind: geval\n    samples: 2\n", 1)))
	rep := estimateOf(t, e)
	if srv.Calls() != 0 {
		t.Fatalf("estimate called the judge %d times", srv.Calls())
	}
	e.run(t, "off", engine.RunOptions{})
	// 1 steps call by judge a, then 3 judges × 2 samples × 3 cases.
	if got := srv.Calls(); rep.Total.JudgeCalls != got || got != 1+3*2*3 {
		t.Errorf("estimate says %d judge calls, the run made %d; want both 19", rep.Total.JudgeCalls, got)
	}
	if m := rep.Metrics[0]; m.Judge != "a, b, c" || !strings.Contains(m.Note, "panel of 3 judges (median), 2 samples each") {
		t.Errorf("row judge %q note %q; want the panel named and a note on it", m.Judge, m.Note)
	}
}

// nMarker prefixes a metrics block whose judge supports n.
const nMarker = "#supports_n\n"

func withN(metrics string) string { return nMarker + metrics }

func configWithN(cfg string, n bool) string {
	if !n {
		return cfg
	}
	return strings.Replace(cfg, "    supports_json_schema: true\n", "    supports_json_schema: true\n    supports_n: true\n", 1)
}

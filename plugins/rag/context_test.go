package rag_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/rag"
)

const (
	cp = rag.KindContextualPrecision
	cr = rag.KindContextualRecall
	cv = rag.KindContextualRelevancy
	hl = rag.KindHallucination
)

// ctxCase has every field the retrieval-context kinds read.
var ctxCase = abi.TestCase{ID: "c1", Input: "When was the Eiffel Tower finished?",
	ActualOutput:     "The Eiffel Tower was finished in 1899. It is in Paris.",
	ExpectedOutput:   "The Eiffel Tower was finished in 1889. It stands in Paris.",
	RetrievalContext: []string{"The Eiffel Tower was completed in 1889.", "Paris has many cafés.", "The tower stands on the Champ de Mars in Paris.", "There was a cat."},
	Context:          []string{"The Eiffel Tower was completed in 1889.", "The Eiffel Tower is in Paris.", "The tower is 330 m tall."}}

// sv is one scripted item verdict: {item, "yes" | "no:reason"}.
type sv struct{ item, verdict string }

func itemVerdicts(noun string, vs []sv) []map[string]string {
	out := []map[string]string{}
	for _, x := range vs {
		verdict, reason, _ := strings.Cut(x.verdict, ":")
		out = append(out, map[string]string{noun: x.item, "verdict": verdict, "reason": reason})
	}
	return out
}

func sentenceReply(vs ...sv) reply {
	r := jsonReply("verdicts", map[string]any{"verdicts": itemVerdicts("sentence", vs)})
	r.Lacks = []string{"Your reply is invalid"}
	return r
}

func nodesReply(nodes ...[]sv) reply {
	out := []map[string]any{}
	for _, n := range nodes {
		out = append(out, map[string]any{"statements": itemVerdicts("statement", n)})
	}
	r := jsonReply("verdicts", map[string]any{"nodes": out})
	r.Lacks = []string{"Your reply is invalid"}
	return r
}

// Golden scores, computed by hand from each kind's formula.
func TestContextScoreArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name, kind, cfg string
		reply           reply
		threshold       float64
		score           float64
		counts          rag.Counts
		failed          []int
		formula         string
		reason          string
	}{
		// Weighted cumulative precision: useful nodes at ranks 1 and 3:
		// (1/1 + 2/3) / 2 = 5/6.
		{"precision useful at 1 and 3", cp, `{}`, verdictReply("yes", "no:About cafés.", "yes", "no:A cat."), 0.8, 5.0 / 6,
			rag.Counts{Yes: 2, No: 2, Total: 4, Passed: 2}, []int{1, 3}, "Σ precision@k over useful nodes / useful = (1/1 + 2/3) / 2 = 0.8333",
			`2 of 4 nodes are useful for the expected output; weighted cumulative precision 0.8333. Ranked above a useful node but not useful: [2] "Paris has many cafés." (no: About cafés.).`},
		// Useful nodes first: 1 whatever follows.
		{"precision useful first", cp, `{}`, verdictReply("yes", "yes", "no:x", "no:y"), 0.5, 1,
			rag.Counts{Yes: 2, No: 2, Total: 4, Passed: 2}, []int{2, 3}, "Σ precision@k over useful nodes / useful = (1/1 + 2/2) / 2 = 1",
			`2 of 4 nodes are useful for the expected output; weighted cumulative precision 1. Every useful node is ranked above the others.`},
		// Ranks 2 and 3: (1/2 + 2/3) / 2 = 7/12.
		{"precision useful at 2 and 3", cp, `{}`, verdictReply("no:x", "yes", "yes", "no:y"), 0.5, 7.0 / 12,
			rag.Counts{Yes: 2, No: 2, Total: 4, Passed: 2}, []int{0, 3}, "Σ precision@k over useful nodes / useful = (1/2 + 2/3) / 2 = 0.5833", ""},
		{"precision nothing useful", cp, `{}`, verdictReply("no:a", "no:b", "no:c", "no:d"), 0.5, 0,
			rag.Counts{No: 4, Total: 4}, []int{0, 1, 2, 3}, "no useful node: score 0",
			`0 of 4 nodes are useful for the expected output; weighted cumulative precision 0. No node is useful.`},
		{"precision strict, not perfect", cp, `{"strict_mode":true}`, verdictReply("no:x", "yes", "yes", "yes"), 0.5, 0,
			rag.Counts{Yes: 3, No: 1, Total: 4, Passed: 3}, []int{0},
			"Σ precision@k over useful nodes / useful = (1/2 + 2/3 + 3/4) / 3 = 0.6389; strict_mode: 1 only if the score is 1 → 0", ""},
		{"precision strict, perfect", cp, `{"strict_mode":true}`, verdictReply("yes", "no:x", "no:y", "no:z"), 0.5, 1,
			rag.Counts{Yes: 1, No: 3, Total: 4, Passed: 1}, []int{1, 2, 3},
			"Σ precision@k over useful nodes / useful = (1/1) / 1 = 1; strict_mode: 1 only if the score is 1 → 1", ""},

		{"recall two of three", cr, `{}`, sentenceReply(sv{"The tower was finished in 1889.", "yes"}, sv{"It is 330 m tall.", "no:No node gives a height."}, sv{"It stands in Paris.", "yes"}), 0.6, 2.0 / 3,
			rag.Counts{Yes: 2, No: 1, Total: 3, Passed: 2}, []int{1}, "yes / n = 2 / 3 = 0.6667",
			`2 of 3 sentences are attributable to the retrieval context. Failing sentences: [2] "It is 330 m tall." (no: No node gives a height.).`},
		{"recall all", cr, `{}`, sentenceReply(sv{"S1.", "yes"}), 0.5, 1,
			rag.Counts{Yes: 1, Total: 1, Passed: 1}, []int{}, "yes / n = 1 / 1 = 1", `The only sentence is attributable to the retrieval context.`},
		{"recall strict", cr, `{"strict_mode":true}`, sentenceReply(sv{"S1.", "yes"}, sv{"S2.", "no:x"}), 0.5, 0,
			rag.Counts{Yes: 1, No: 1, Total: 2, Passed: 1}, []int{1}, "yes / n = 1 / 2 = 0.5; strict_mode: 1 only if the score is 1 → 0",
			`1 of 2 sentences are attributable to the retrieval context. Failing sentences: [2] "S2." (no: x). strict_mode: score 0 because the score is not 1.`},

		// Statements over all nodes: 1 + 0 + 1 + 0 relevant of 2 + 0 + 1 + 1.
		{"relevancy over nodes", cv, `{}`, nodesReply([]sv{{"Completed in 1889.", "yes"}, {"Built of iron.", "no:Material, not date."}}, nil, []sv{{"It stands in Paris.", "yes"}}, []sv{{"There was a cat.", "no:Unrelated."}}), 0.5, 0.5,
			rag.Counts{Yes: 2, No: 2, Total: 4, Passed: 2}, []int{1, 3}, "relevant / statements = 2 / 4 = 0.5",
			`2 of 4 statements are relevant to the input. Failing statements: [2] "Built of iron." (node 1, no: Material, not date.); [4] "There was a cat." (node 4, no: Unrelated.).`},
		{"relevancy no statements", cv, `{}`, nodesReply(nil, nil, nil, nil), 0.5, 0,
			rag.Counts{}, []int{}, "no statements: score 0", `The retrieval context makes no statement, so none is relevant to the input.`},

		// One contradicted context of three: rate 1/3, score 2/3; "idk"
		// (not addressed) is not a contradiction.
		{"hallucination one contradiction", hl, `{}`, verdictReply("no:The output says 1899; the context says 1889.", "yes", "idk:Height not mentioned."), 0.5, 2.0 / 3,
			rag.Counts{Yes: 1, No: 1, Idk: 1, Total: 3, Passed: 2}, []int{0}, "1 − no / n = 1 − 1 / 3 = 0.6667 (hallucination rate 0.3333)",
			`2 of 3 contexts are not contradicted by the actual output. Failing contexts: [1] "The Eiffel Tower was completed in 1889." (no: The output says 1899; the context says 1889.).`},
		{"hallucination none", hl, `{}`, verdictReply("yes", "yes", "idk:x"), 0.5, 1,
			rag.Counts{Yes: 2, Idk: 1, Total: 3, Passed: 3}, []int{}, "1 − no / n = 1 − 0 / 3 = 1 (hallucination rate 0)",
			`All 3 contexts are not contradicted by the actual output.`},
		{"hallucination strict", hl, `{"strict_mode":true}`, verdictReply("yes", "no:x", "yes"), 0.3, 0,
			rag.Counts{Yes: 2, No: 1, Total: 3, Passed: 2}, []int{1}, "1 − no / n = 1 − 1 / 3 = 0.6667 (hallucination rate 0.3333); strict_mode: 1 only if the score is 1 → 0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{tc.reply}}
			res := meas(h, tc.kind, tc.cfg, tc.threshold, ctxCase)
			strict := strings.Contains(tc.cfg, "strict")
			wantThreshold := tc.threshold
			if strict {
				wantThreshold = 1
			}
			if got := mustScore(t, res); !near(got, tc.score) || res.Success != (tc.score >= wantThreshold) || res.Threshold != wantThreshold {
				t.Errorf("score %v success %v threshold %v, want %v (threshold %v)", got, res.Success, res.Threshold, tc.score, wantThreshold)
			}
			// One judge call: every node judged at once, no reason call.
			if got := h.Purposes(); !slices.Equal(got, []string{rag.PurposeVerdicts}) {
				t.Errorf("calls = %v, want one verdict call", got)
			}
			d := details(t, res)
			if d.Kind != tc.kind || d.Counts != tc.counts || !slices.Equal(d.Failed, tc.failed) || d.Formula != tc.formula {
				t.Errorf("details kind %q counts %+v failed %v formula %q", d.Kind, d.Counts, d.Failed, d.Formula)
			}
			if tc.reason != "" && res.Reason != tc.reason {
				t.Errorf("reason =\n%s\nwant\n%s", res.Reason, tc.reason)
			}
			if d.IdkCountsAs != "" || d.StrictMode != strict || d.Repaired || d.Usage.Calls != 1 || d.ReasonSource != rag.ReasonFromItems {
				t.Errorf("details = %+v", d)
			}
			if tc.kind == hl {
				if d.HallucinationRate == nil || *d.HallucinationRate != float64(tc.counts.No)/float64(tc.counts.Total) {
					t.Errorf("hallucination_rate = %v", d.HallucinationRate)
				}
			} else if d.HallucinationRate != nil {
				t.Errorf("hallucination_rate set for %s", tc.kind)
			}
		})
	}
}

// The verdicts name what they judge: the ranked nodes, the contexts, the
// sentences and statements the judge quoted (with their node).
func TestContextVerdictItems(t *testing.T) {
	h := &scripter{Replies: []reply{verdictReply("yes", "no:x", "yes", "no:y")}}
	d := details(t, meas(h, cp, `{}`, 0.5, ctxCase))
	for i, v := range d.Verdicts {
		if v.Item != ctxCase.RetrievalContext[i] || v.Node != 0 {
			t.Errorf("precision verdict %d = %+v", i, v)
		}
	}
	h = &scripter{Replies: []reply{nodesReply([]sv{{"A.", "yes"}}, nil, []sv{{"B.", "no:b"}, {"C.", "yes"}}, nil)}}
	d = details(t, meas(h, cv, `{}`, 0.5, ctxCase))
	want := []rag.Verdict{{Item: "A.", Node: 1, Verdict: "yes", Pass: true}, {Item: "B.", Node: 3, Verdict: "no", Reason: "b"}, {Item: "C.", Node: 3, Verdict: "yes", Pass: true}}
	if !slices.Equal(d.Verdicts, want) {
		t.Errorf("relevancy verdicts = %+v", d.Verdicts)
	}
}

// The requests: one per case, temperature 0, the case's fields fenced, the
// nodes numbered in rank order, the count stated, a schema per shape.
func TestContextRequestShape(t *testing.T) {
	for _, tc := range []struct {
		kind, schemaName string
		reply            reply
		has              []string
		lacks            []string
	}{
		{cp, "rag_node_verdicts", verdictReply("yes", "yes", "yes", "yes"), []string{
			"<<<BEGIN INPUT>>>\nWhen was the Eiffel Tower finished?\n<<<END INPUT>>>",
			"<<<BEGIN EXPECTED OUTPUT>>>\nThe Eiffel Tower was finished in 1889. It stands in Paris.\n<<<END EXPECTED OUTPUT>>>",
			"[1] The Eiffel Tower was completed in 1889.\n[2] Paris has many cafés.\n[3] The tower stands on the Champ de Mars in Paris.\n[4] There was a cat.",
			"in rank order (node 1 ranked highest)", "exactly 4 objects", `"enum":["yes","no"]`, `"minItems":4,"maxItems":4`}, []string{ctxCase.ActualOutput}},
		{cr, "rag_sentence_verdicts", sentenceReply(sv{"s.", "yes"}), []string{
			"<<<BEGIN EXPECTED OUTPUT>>>\nThe Eiffel Tower was finished in 1889. It stands in Paris.\n<<<END EXPECTED OUTPUT>>>",
			"[4] There was a cat.", `"sentence"`, `"minItems":1,"items"`}, []string{ctxCase.ActualOutput, ctxCase.Input}},
		{cv, "rag_node_statements", nodesReply(nil, nil, nil, []sv{{"s.", "yes"}}), []string{
			"<<<BEGIN INPUT>>>\nWhen was the Eiffel Tower finished?\n<<<END INPUT>>>", "[4] There was a cat.", "exactly 4 objects", `"statements"`, `"nodes":{"type":"array","minItems":4,"maxItems":4`},
			[]string{ctxCase.ActualOutput, ctxCase.ExpectedOutput}},
		{hl, "rag_context_verdicts", verdictReply("yes", "yes", "yes"), []string{
			"<<<BEGIN ACTUAL OUTPUT>>>\nThe Eiffel Tower was finished in 1899. It is in Paris.\n<<<END ACTUAL OUTPUT>>>",
			"[1] The Eiffel Tower was completed in 1889.\n[2] The Eiffel Tower is in Paris.\n[3] The tower is 330 m tall.", "exactly 3 objects",
			"is NOT a contradiction", `"enum":["yes","no","idk"]`, `"minItems":3,"maxItems":3`}, []string{"There was a cat.", ctxCase.Input}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h := &scripter{Replies: []reply{tc.reply}}
			mustScore(t, meas(h, tc.kind, `{}`, 0.5, ctxCase))
			if len(h.Calls()) != 1 {
				t.Fatalf("%d calls", len(h.Calls()))
			}
			c := h.Calls()[0]
			if c.Temperature == nil || *c.Temperature != 0 || c.SchemaName != tc.schemaName || len(c.Messages) != 2 ||
				!strings.Contains(c.Messages[0].Content, rag.PromptVersion) {
				t.Errorf("request = %+v", c)
			}
			p := prompt(c) + string(c.Schema)
			for _, want := range tc.has {
				if !strings.Contains(p, want) {
					t.Errorf("prompt lacks %q:\n%s", want, p)
				}
			}
			for _, bad := range tc.lacks {
				if strings.Contains(p, bad) {
					t.Errorf("prompt has %q, a field the kind does not read", bad)
				}
			}
		})
	}
}

// A reply that does not fit the case (a count off, a verdict outside the
// kind's set, a missing sentence) is repaired once with the problem stated,
// then a judge_error naming both problems. DeepEval raises on a count
// mismatch (contextual_precision) or silently scores what it got.
func TestContextRepair(t *testing.T) {
	for _, tc := range []struct {
		name, kind      string
		first, repaired reply
		problem, want   string
		score           float64
	}{
		{"precision count", cp, verdictReply("yes", "no:x", "yes"), repairWith(verdictReply("yes", "no:x", "yes", "no:y"), "3 verdicts for 4 nodes"),
			"3 verdicts for 4 nodes", `exactly 4 verdicts, one per node, in the order of the numbered list, each verdict "yes" or "no"`, 5.0 / 6},
		{"precision idk is not a precision verdict", cp, verdictReply("yes", "idk:x", "yes", "no"), repairWith(verdictReply("yes", "no:x", "yes", "no:y"), `verdict 2 is "idk", not "yes" or "no"`),
			`verdict 2 is "idk", not "yes" or "no"`, "", 5.0 / 6},
		{"hallucination count", hl, verdictReply("yes"), repairWith(verdictReply("yes", "no:x", "yes"), "1 verdict for 3 contexts"),
			"1 verdict for 3 contexts", `exactly 3 verdicts, one per context, in the order of the numbered list, each verdict "yes", "no" or "idk"`, 2.0 / 3},
		{"recall no sentences", cr, sentenceReply(), repairWith(sentenceReply(sv{"S.", "yes"}), "no sentences"),
			"no sentences: the expected output is not empty", "one verdict per sentence of the expected output", 1},
		{"recall sentence missing", cr, sentenceReply(sv{" ", "yes"}), repairWith(sentenceReply(sv{"S.", "no:x"}), `verdict 1 has no "sentence"`),
			`verdict 1 has no "sentence"`, "", 0},
		{"relevancy node count", cv, nodesReply([]sv{{"A.", "yes"}}), repairWith(nodesReply([]sv{{"A.", "yes"}}, nil, nil, []sv{{"B.", "no:b"}}), "1 node entry for 4 nodes"),
			"1 node entry for 4 nodes", `exactly 4 entries in "nodes"`, 0.5},
		{"relevancy bad verdict", cv, nodesReply(nil, []sv{{"A.", "maybe"}}, nil, nil), repairWith(nodesReply(nil, []sv{{"A.", "yes"}}, nil, nil), `node 2: verdict 1 is "maybe"`),
			`node 2: verdict 1 is "maybe", not "yes" or "no"`, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{tc.first, tc.repaired}}
			res := meas(h, tc.kind, `{}`, 0.5, ctxCase)
			if got := mustScore(t, res); !near(got, tc.score) {
				t.Errorf("score = %v, want %v", got, tc.score)
			}
			d := details(t, res)
			if !d.Repaired || d.RepairCause != tc.problem || d.Usage.Calls != 2 || len(h.Calls()) != 2 {
				t.Errorf("repaired %v cause %q calls %d", d.Repaired, d.RepairCause, d.Usage.Calls)
			}
			rep := h.Calls()[1]
			if len(rep.Messages) != 4 || rep.Messages[2].Role != "assistant" || !strings.Contains(rep.Messages[3].Content, tc.want) ||
				rep.SchemaName != h.Calls()[0].SchemaName {
				t.Errorf("repair request = %+v", rep.Messages)
			}
		})
	}
	t.Run("fails twice", func(t *testing.T) {
		h := &scripter{Replies: []reply{verdictReply("yes"), repairWith(verdictReply("yes", "yes"), "")}}
		res := meas(h, cp, `{}`, 0.5, ctxCase)
		want := "contextual_precision: invalid verdicts after one repair attempt: first reply: 1 verdict for 4 nodes; repair reply: 2 verdicts for 4 nodes"
		if res.Error == nil || res.Error.Code != abi.CodeJudge || res.Error.Message != want || res.Score != nil {
			t.Fatalf("result = %+v, want judge_error %q", res.Error, want)
		}
	})
}

// near compares scores computed in a different order of operations.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// repairWith answers the repair request whose prompt states problem.
func repairWith(r reply, problem string) reply {
	r.Lacks = nil
	r.Contains = []string{"Your reply is invalid (" + problem}
	return r
}

func TestContextReasonCall(t *testing.T) {
	h := &scripter{Replies: []reply{verdictReply("no:x", "yes", "yes", "no:y"), reasonReply("Node 1 is ranked first but does not help.")}}
	res := meas(h, cp, `{"reason_call":true}`, 0.5, ctxCase)
	if got := mustScore(t, res); !near(got, 7.0/12) || res.Reason != "Node 1 is ranked first but does not help." {
		t.Errorf("score %v reason %q", got, res.Reason)
	}
	if got := h.Purposes(); !slices.Equal(got, []string{"verdicts", "reason"}) {
		t.Errorf("calls = %v", got)
	}
	rp := prompt(h.Calls()[1])
	for _, want := range []string{"weighted cumulative precision", "Score: 0.5833", ctxCase.Input, `[1] "The Eiffel Tower was completed in 1889." (no: x)`} {
		if !strings.Contains(rp, want) {
			t.Errorf("reason prompt lacks %q:\n%s", want, rp)
		}
	}
	if d := details(t, res); d.ReasonSource != rag.ReasonFromJudge || d.Usage.Calls != 2 {
		t.Errorf("details = %+v", d)
	}
}

func TestContextMissingField(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		clear func(c *abi.TestCase)
		field string
	}{
		{cp, func(c *abi.TestCase) { c.ExpectedOutput = "" }, abi.FieldExpectedOutput},
		{cp, func(c *abi.TestCase) { c.RetrievalContext = []string{} }, abi.FieldRetrievalContext},
		{cp, func(c *abi.TestCase) { c.Input = "" }, abi.FieldInput},
		{cr, func(c *abi.TestCase) { c.ExpectedOutput = "" }, abi.FieldExpectedOutput},
		{cr, func(c *abi.TestCase) { c.RetrievalContext = nil }, abi.FieldRetrievalContext},
		{cv, func(c *abi.TestCase) { c.Input = "" }, abi.FieldInput},
		{cv, func(c *abi.TestCase) { c.RetrievalContext = nil }, abi.FieldRetrievalContext},
		{hl, func(c *abi.TestCase) { c.Context = []string{} }, abi.FieldContext},
		{hl, func(c *abi.TestCase) { c.ActualOutput = "" }, abi.FieldActualOutput},
	} {
		c := ctxCase
		tc.clear(&c)
		h := &scripter{}
		res := meas(h, tc.kind, `{}`, 0.5, c)
		if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != tc.field || len(h.Calls()) != 0 {
			t.Errorf("%s without %s: error = %+v, %d calls", tc.kind, tc.field, res.Error, len(h.Calls()))
		}
	}
	// Fields a kind does not read are not required (DeepEval asks for
	// actual_output in contextual_precision and contextual_recall).
	for _, kind := range []string{cp, cr, cv} {
		c := ctxCase
		c.ActualOutput = ""
		h := &scripter{Replies: []reply{verdictReply("yes", "yes", "yes", "yes"), sentenceReply(sv{"S.", "yes"})}}
		if kind == cv {
			h.Replies = []reply{nodesReply([]sv{{"S.", "yes"}}, nil, nil, nil)}
		} else if kind == cr {
			h.Replies = h.Replies[1:]
		}
		mustScore(t, meas(h, kind, `{}`, 0.5, c))
	}
}

func TestContextInvalidConfig(t *testing.T) {
	for _, kind := range []string{cp, cr, cv, hl} {
		for _, cfg := range []string{`{"idk_counts_as":"no"}`, `{"include_reason":true}`, `{"strict_mode":"yes"}`} {
			h := &scripter{}
			res := meas(h, kind, cfg, 0.5, ctxCase)
			if res.Error == nil || res.Error.Code != abi.CodeInvalidConfig || len(h.Calls()) != 0 {
				t.Errorf("%s %s: error = %+v", kind, cfg, res.Error)
			}
		}
	}
}

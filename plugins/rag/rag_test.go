package rag_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
	"github.com/agentanvil/anvil/plugins/rag"
)

var ctx = context.Background()

const (
	ar = rag.KindAnswerRelevancy
	ff = rag.KindFaithfulness
)

var (
	arCase = abi.TestCase{ID: "ar1", Input: "What is the capital of France?",
		ActualOutput: "Paris is the capital of France. It has great food."}
	fCase = abi.TestCase{ID: "f1", ActualOutput: "The Eiffel Tower, in Paris, was finished in 1899.",
		RetrievalContext: []string{"Paris is the capital of France.", "The Eiffel Tower was completed in 1889."}}
)

func caseFor(kind string) abi.TestCase {
	if kind == ar {
		return arCase
	}
	return fCase
}

// extractPurpose is the purpose of a kind's first (extraction) call.
func extractPurpose(kind string) string {
	if kind == ar {
		return rag.PurposeStatements
	}
	return rag.PurposeClaims
}

func meas(h *scripter, kind, cfg string, threshold float64, c abi.TestCase) *abi.MeasureResult {
	return rag.Plugin().Measure(ctx, h, &abi.MeasureRequest{Kind: kind, Metric: "m", Config: json.RawMessage(cfg),
		Threshold: threshold, JudgeModel: "judge-1", Case: c})
}

func details(t *testing.T, res *abi.MeasureResult) rag.Details {
	return scripted.Details[rag.Details](t, res)
}

func mustScore(t *testing.T, res *abi.MeasureResult) float64 {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("measure error: %v", res.Error)
	}
	if res.Score == nil {
		t.Fatal("no score")
	}
	return *res.Score
}

// items returns the statements or claims of d.
func items(kind string, d rag.Details) []string {
	if kind == ar {
		return d.Statements
	}
	return d.Claims
}

func TestScoreArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name, kind, cfg string
		verdicts        []v
		threshold       float64
		score           float64
		success         bool
		counts          rag.Counts
		failed          []int
		formula         string
	}{
		{"relevancy all yes", ar, `{}`, []v{"yes", "yes", "yes"}, 0.5, 1, true,
			rag.Counts{Yes: 3, Total: 3, Passed: 3}, []int{}, "(yes + idk) / n = (3 + 0) / 3 = 1"},
		{"relevancy mix, idk counts as yes (default)", ar, `{}`, []v{"yes", "no:off topic", "idk:supporting", "yes"}, 0.75, 0.75, true,
			rag.Counts{Yes: 2, No: 1, Idk: 1, Total: 4, Passed: 3}, []int{1}, "(yes + idk) / n = (2 + 1) / 4 = 0.75"},
		{"relevancy mix, idk_counts_as yes explicit", ar, `{"idk_counts_as":"yes"}`, []v{"yes", "no:off topic", "idk:supporting", "yes"}, 0.8, 0.75, false,
			rag.Counts{Yes: 2, No: 1, Idk: 1, Total: 4, Passed: 3}, []int{1}, "(yes + idk) / n = (2 + 1) / 4 = 0.75"},
		{"relevancy mix, idk_counts_as no", ar, `{"idk_counts_as":"no"}`, []v{"yes", "no:off topic", "idk:supporting", "yes"}, 0.5, 0.5, true,
			rag.Counts{Yes: 2, No: 1, Idk: 1, Total: 4, Passed: 2}, []int{1, 2}, "yes / n = 2 / 4 = 0.5"},
		{"relevancy all no", ar, `{}`, []v{"no:a", "no:b"}, 0, 0, true,
			rag.Counts{No: 2, Total: 2, Passed: 0}, []int{0, 1}, "(yes + idk) / n = (0 + 0) / 2 = 0"},
		{"relevancy one third", ar, `{}`, []v{"no:a", "yes", "no:b"}, 0.5, 1.0 / 3, false,
			rag.Counts{Yes: 1, No: 2, Total: 3, Passed: 1}, []int{0, 2}, "(yes + idk) / n = (1 + 0) / 3 = 0.3333"},
		{"faithfulness yes/no/idk", ff, `{}`, []v{"yes", "no:context says 1889", "idk:not mentioned"}, 0.7, 2.0 / 3, false,
			rag.Counts{Yes: 1, No: 1, Idk: 1, Total: 3, Passed: 2}, []int{1}, "(yes + idk) / n = (1 + 1) / 3 = 0.6667"},
		{"faithfulness all idk (default)", ff, `{}`, []v{"idk:x", "idk:y"}, 1, 1, true,
			rag.Counts{Idk: 2, Total: 2, Passed: 2}, []int{}, "(yes + idk) / n = (0 + 2) / 2 = 1"},
		{"faithfulness idk_counts_as no", ff, `{"idk_counts_as":"no"}`, []v{"yes", "idk:x", "idk:y", "yes", "no:z"}, 0.4, 0.4, true,
			rag.Counts{Yes: 2, No: 1, Idk: 2, Total: 5, Passed: 2}, []int{1, 2, 4}, "yes / n = 2 / 5 = 0.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			its := statements(len(tc.verdicts))
			h := &scripter{Replies: []reply{listReply(extractPurpose(tc.kind), its...), verdictReply(tc.verdicts...)}}
			res := meas(h, tc.kind, tc.cfg, tc.threshold, caseFor(tc.kind))
			if got := mustScore(t, res); got != tc.score || res.Success != tc.success || res.Threshold != tc.threshold {
				t.Errorf("score %v success %v threshold %v, want %v %v %v", got, res.Success, res.Threshold, tc.score, tc.success, tc.threshold)
			}
			if res.ScoreMode != "" {
				t.Errorf("score_mode = %q, want empty", res.ScoreMode)
			}
			// Exactly two judge calls, in two batches, in this order.
			if got, want := h.Purposes(), []string{extractPurpose(tc.kind), rag.PurposeVerdicts}; !slices.Equal(got, want) {
				t.Errorf("calls = %v, want %v", got, want)
			}
			if len(h.Batches()) != 2 {
				t.Errorf("%d batches, want 2", len(h.Batches()))
			}
			d := details(t, res)
			if d.Kind != tc.kind || d.Counts != tc.counts || !slices.Equal(d.Failed, tc.failed) || d.Formula != tc.formula {
				t.Errorf("details kind %q counts %+v failed %v formula %q", d.Kind, d.Counts, d.Failed, d.Formula)
			}
			if !slices.Equal(items(tc.kind, d), its) || len(d.Verdicts) != len(its) {
				t.Fatalf("items %v, %d verdicts", items(tc.kind, d), len(d.Verdicts))
			}
			for i, x := range tc.verdicts {
				verdict, reason, _ := strings.Cut(string(x), ":")
				got := d.Verdicts[i]
				pass := verdict == "yes" || (verdict == "idk" && d.IdkCountsAs == "yes")
				if got != (rag.Verdict{Item: its[i], Verdict: verdict, Reason: reason, Pass: pass}) {
					t.Errorf("verdict %d = %+v", i, got)
				}
			}
			if d.Repaired || d.ReasonSource != rag.ReasonFromItems || d.PromptVersion != rag.PromptVersion || d.StrictMode {
				t.Errorf("details = %+v", d)
			}
			u := d.Usage
			if u.Calls != 2 || u.InputTokens != 200 || u.OutputTokens != 40 || u.USD != 0.002 || u.CacheHits != 0 || len(u.PerCall) != 2 ||
				u.PerCall[1] != (rag.CallUsage{Purpose: "verdicts", Model: "judge-1", InputTokens: 100, OutputTokens: 20, USD: 0.001}) {
				t.Errorf("usage = %+v", u)
			}
		})
	}
}

// The requests: temperature 0, structured output, the test case fenced,
// the items numbered, the count stated.
func TestRequestShape(t *testing.T) {
	for _, tc := range []struct {
		kind          string
		extractSchema string
		verdictHas    []string
	}{
		{ar, "rag_statements", []string{"<<<BEGIN INPUT>>>\nWhat is the capital of France?\n<<<END INPUT>>>", "1. Statement 1.\n2. Statement 2.\n<<<END STATEMENTS>>>", "exactly 2 objects", "relevant to addressing the input"}},
		{ff, "rag_claims", []string{"[1] Paris is the capital of France.\n[2] The Eiffel Tower was completed in 1889.", "1. Statement 1.\n2. Statement 2.\n<<<END CLAIMS>>>", "exactly 2 objects", "DIRECTLY contradicts"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h := &scripter{Replies: []reply{listReply(extractPurpose(tc.kind), statements(2)...), verdictReply("yes", "yes")}}
			mustScore(t, meas(h, tc.kind, `{}`, 0.5, caseFor(tc.kind)))
			if len(h.Calls()) != 2 {
				t.Fatalf("%d calls", len(h.Calls()))
			}
			for _, c := range h.Calls() {
				if c.Temperature == nil || *c.Temperature != 0 || c.Score != nil || c.TopLogprobs != 0 || c.Judge != "" {
					t.Errorf("%s request: temperature %v score %v top %d", c.Purpose, c.Temperature, c.Score, c.TopLogprobs)
				}
				if len(c.Messages) != 2 || c.Messages[0].Role != "system" || !strings.Contains(c.Messages[0].Content, rag.PromptVersion) {
					t.Errorf("%s messages = %+v", c.Purpose, c.Messages)
				}
				var sch map[string]any
				if err := json.Unmarshal(c.Schema, &sch); err != nil || sch["type"] != "object" {
					t.Errorf("%s schema = %s", c.Purpose, c.Schema)
				}
			}
			ex, vr := h.Calls()[0], h.Calls()[1]
			if ex.SchemaName != tc.extractSchema || !strings.Contains(prompt(ex), "<<<BEGIN TEXT>>>\n"+caseFor(tc.kind).ActualOutput+"\n<<<END TEXT>>>") {
				t.Errorf("extraction request %s:\n%s", ex.SchemaName, prompt(ex))
			}
			if vr.SchemaName != "rag_verdicts" || !strings.Contains(string(vr.Schema), `"enum":["yes","no","idk"]`) {
				t.Errorf("verdict schema %s %s", vr.SchemaName, vr.Schema)
			}
			for _, want := range tc.verdictHas {
				if !strings.Contains(prompt(vr), want) {
					t.Errorf("verdict prompt lacks %q:\n%s", want, prompt(vr))
				}
			}
		})
	}
}

// A verdict count that does not match the item count is repaired once, with
// the mismatch stated to the judge.
func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		first      []v
		problem    string
		repaired   []v
		score      float64
	}{
		{"relevancy too few", ar, []v{"yes", "yes", "no:x"}, "3 verdicts for 4 statements", []v{"yes", "yes", "no:x", "idk:y"}, 0.75},
		{"faithfulness too many", ff, []v{"yes", "yes", "yes", "no:x", "yes"}, "5 verdicts for 4 claims", []v{"yes", "no:x", "yes", "yes"}, 0.75},
		{"bad verdict value", ar, []v{"yes", "maybe", "yes", "yes"}, `verdict 2 is "maybe", not "yes", "no" or "idk"`, []v{"yes", "no:x", "yes", "yes"}, 0.75},
		{"one verdict for one statement is fine", ar, []v{"yes", "yes", "yes", "yes"}, "", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{listReply(extractPurpose(tc.kind), statements(4)...), verdictReply(tc.first...)}}
			if tc.repaired != nil {
				h.Replies = append(h.Replies, repairReply(tc.problem, tc.repaired...))
			}
			res := meas(h, tc.kind, `{}`, 0.5, caseFor(tc.kind))
			if got := mustScore(t, res); got != tc.score {
				t.Errorf("score = %v, want %v", got, tc.score)
			}
			d := details(t, res)
			want := []string{extractPurpose(tc.kind), "verdicts"}
			if tc.repaired != nil {
				want = append(want, "verdicts")
			}
			if got := h.Purposes(); !slices.Equal(got, want) {
				t.Fatalf("calls = %v, want %v", got, want)
			}
			if d.Repaired != (tc.repaired != nil) || d.RepairCause != tc.problem || d.Usage.Calls != len(want) {
				t.Errorf("repaired %v cause %q calls %d", d.Repaired, d.RepairCause, d.Usage.Calls)
			}
			if tc.repaired == nil {
				return
			}
			// The repair shows the judge its previous reply, then the problem.
			rep := h.Calls()[2]
			orig := h.Calls()[1]
			if len(rep.Messages) != 4 || !reflect.DeepEqual(rep.Messages[:2], orig.Messages) ||
				rep.Messages[2].Role != "assistant" || rep.Messages[2].Content != string(h.Replies[1].Resp.JSON) ||
				rep.Messages[3].Role != "user" || !strings.Contains(rep.Messages[3].Content, "exactly 4 verdicts") ||
				rep.Temperature == nil || *rep.Temperature != 0 || rep.SchemaName != "rag_verdicts" {
				t.Errorf("repair request = %+v", rep)
			}
		})
	}
}

// Verdict strings are normalised ("Yes.", " IDK ") without a repair.
func TestVerdictNormalised(t *testing.T) {
	h := &scripter{Replies: []reply{listReply("statements", statements(3)...), verdictReply(" Yes.", "IDK :hm", "No:x")}}
	res := meas(h, ar, `{}`, 0.5, arCase)
	if got := mustScore(t, res); got != 2.0/3 {
		t.Errorf("score = %v", got)
	}
	d := details(t, res)
	if d.Repaired || d.Verdicts[0].Verdict != "yes" || d.Verdicts[1].Verdict != "idk" || d.Verdicts[2].Verdict != "no" || len(h.Calls()) != 2 {
		t.Errorf("verdicts %+v repaired %v calls %d", d.Verdicts, d.Repaired, len(h.Calls()))
	}
}

// A mismatch that survives the repair is a judge_error naming both counts.
func TestRepairFails(t *testing.T) {
	for _, tc := range []struct {
		kind          string
		first, second []v
		want          string
	}{
		{ar, []v{"yes", "yes", "yes"}, []v{"yes", "yes", "yes", "yes", "yes"},
			"answer_relevancy: invalid verdicts after one repair attempt: first reply: 3 verdicts for 4 statements; repair reply: 5 verdicts for 4 statements"},
		{ff, []v{"yes"}, []v{"yes", "no:x"},
			"faithfulness: invalid verdicts after one repair attempt: first reply: 1 verdict for 4 claims; repair reply: 2 verdicts for 4 claims"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h := &scripter{Replies: []reply{
				listReply(extractPurpose(tc.kind), statements(4)...),
				verdictReply(tc.first...),
				jsonReply("verdicts", verdictsJSON(tc.second...), "Your reply is invalid"),
			}}
			res := meas(h, tc.kind, `{}`, 0.5, caseFor(tc.kind))
			if res.Error == nil || res.Error.Code != abi.CodeJudge || res.Error.Message != tc.want || res.Score != nil {
				t.Fatalf("result = %+v, error %v; want judge_error %q", res, res.Error, tc.want)
			}
			if got := h.Purposes(); len(got) != 3 || got[1] != "verdicts" || got[2] != "verdicts" {
				t.Errorf("calls = %v, want extraction + verdicts + one repair", got)
			}
		})
	}
}

// No statements (claims): score 1, reason "no statements" ("no claims"),
// and no verdict call.
func TestZeroItems(t *testing.T) {
	for _, tc := range []struct {
		kind, cfg, reason string
	}{
		{ar, `{}`, "no statements"},
		{ar, `{"strict_mode":true,"reason_call":true}`, "no statements"},
		{ff, `{}`, "no claims"},
		{ff, `{"idk_counts_as":"no"}`, "no claims"},
	} {
		t.Run(tc.kind+tc.cfg, func(t *testing.T) {
			h := &scripter{Replies: []reply{listReply(extractPurpose(tc.kind))}}
			res := meas(h, tc.kind, tc.cfg, 0.9, caseFor(tc.kind))
			if got := mustScore(t, res); got != 1 || !res.Success || res.Reason != tc.reason {
				t.Errorf("score %v success %v reason %q", got, res.Success, res.Reason)
			}
			if got := h.Purposes(); !slices.Equal(got, []string{extractPurpose(tc.kind)}) {
				t.Errorf("calls = %v, want the extraction only", got)
			}
			d := details(t, res)
			if len(items(tc.kind, d)) != 0 || len(d.Verdicts) != 0 || d.Counts != (rag.Counts{}) || d.Formula != tc.reason+": score 1" || len(d.Warnings) != 1 {
				t.Errorf("details = %+v", d)
			}
		})
	}
}

func TestStrictMode(t *testing.T) {
	for _, tc := range []struct {
		name, kind, cfg string
		verdicts        []v
		score           float64
		formula         string
	}{
		{"all yes", ar, `{"strict_mode":true}`, []v{"yes", "yes"}, 1, "(yes + idk) / n = (2 + 0) / 2 = 1; strict_mode: 1 only if every verdict passes → 1"},
		{"one no", ar, `{"strict_mode":true}`, []v{"yes", "no:x", "yes", "yes"}, 0, "(yes + idk) / n = (3 + 0) / 4 = 0.75; strict_mode: 1 only if every verdict passes → 0"},
		{"idk passes by default", ff, `{"strict_mode":true}`, []v{"yes", "idk:x"}, 1, "(yes + idk) / n = (1 + 1) / 2 = 1; strict_mode: 1 only if every verdict passes → 1"},
		{"idk fails with idk_counts_as no", ff, `{"strict_mode":true,"idk_counts_as":"no"}`, []v{"yes", "idk:x"}, 0, "yes / n = 1 / 2 = 0.5; strict_mode: 1 only if every verdict passes → 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{listReply(extractPurpose(tc.kind), statements(len(tc.verdicts))...), verdictReply(tc.verdicts...)}}
			res := meas(h, tc.kind, tc.cfg, 0.2, caseFor(tc.kind))
			if got := mustScore(t, res); got != tc.score || res.Threshold != 1 || res.Success != (tc.score == 1) {
				t.Errorf("score %v threshold %v success %v", got, res.Threshold, res.Success)
			}
			d := details(t, res)
			if !d.StrictMode || d.Formula != tc.formula {
				t.Errorf("strict %v formula %q", d.StrictMode, d.Formula)
			}
			if strict := strings.Contains(res.Reason, "strict_mode: score 0 because not every verdict passes."); strict != (tc.score == 0) {
				t.Errorf("reason = %q", res.Reason)
			}
		})
	}
}

// The reason is built from the failing items: text, verdict and reason.
func TestReasonListsFailingItems(t *testing.T) {
	for _, tc := range []struct {
		name, kind, cfg string
		verdicts        []v
		want            string
	}{
		{"relevancy", ar, `{}`, []v{"yes", "no:Talks about food, not the capital.", "idk:Background only.", "no"},
			`2 of 4 statements count as relevant to the input (1 "idk" counted as passing). Failing statements: [2] "Statement 2." (no: Talks about food, not the capital.); [4] "Statement 4." (no).`},
		{"relevancy all pass", ar, `{}`, []v{"yes", "yes", "yes"}, `All 3 statements are relevant to the input.`},
		{"relevancy single", ar, `{}`, []v{"yes"}, `The only statement is relevant to the input.`},
		{"faithfulness idk fails", ff, `{"idk_counts_as":"no"}`, []v{"yes", "no:The context says 1889.", "idk:Not mentioned."},
			`1 of 3 claims count as faithful to the retrieval context. Failing claims: [2] "Statement 2." (no: The context says 1889.); [3] "Statement 3." (idk: Not mentioned.).`},
		{"faithfulness idk passes", ff, `{}`, []v{"idk:Not mentioned.", "yes"},
			`All 2 claims are faithful to the retrieval context (1 "idk" counted as passing).`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{listReply(extractPurpose(tc.kind), statements(len(tc.verdicts))...), verdictReply(tc.verdicts...)}}
			res := meas(h, tc.kind, tc.cfg, 0.5, caseFor(tc.kind))
			mustScore(t, res)
			if res.Reason != tc.want {
				t.Errorf("reason =\n%s\nwant\n%s", res.Reason, tc.want)
			}
			if len(h.Calls()) != 2 {
				t.Errorf("%d calls, want 2 (no reason call)", len(h.Calls()))
			}
		})
	}
}

func TestReasonCall(t *testing.T) {
	t.Run("prose from the judge", func(t *testing.T) {
		h := &scripter{Replies: []reply{listReply("statements", statements(2)...), verdictReply("yes", "no:off topic"), reasonReply("Half the answer is about food.")}}
		res := meas(h, ar, `{"reason_call":true}`, 0.5, arCase)
		if got := mustScore(t, res); got != 0.5 || res.Reason != "Half the answer is about food." {
			t.Errorf("score %v reason %q", got, res.Reason)
		}
		if got := h.Purposes(); !slices.Equal(got, []string{"statements", "verdicts", "reason"}) {
			t.Errorf("calls = %v", got)
		}
		d := details(t, res)
		if d.ReasonSource != rag.ReasonFromJudge || d.Usage.Calls != 3 || d.ReasonError != nil {
			t.Errorf("details = %+v", d)
		}
		rp := prompt(h.Calls()[2])
		for _, want := range []string{"What is the capital of France?", `[2] "Statement 2." (no: off topic)`, "Score: 0.5", `"yes" and "idk" count`} {
			if !strings.Contains(rp, want) {
				t.Errorf("reason prompt lacks %q:\n%s", want, rp)
			}
		}
		if h.Calls()[2].SchemaName != "rag_reason" || *h.Calls()[2].Temperature != 0 {
			t.Errorf("reason request = %+v", h.Calls()[2])
		}
	})
	t.Run("a failed reason call keeps the score", func(t *testing.T) {
		h := &scripter{Replies: []reply{listReply("claims", statements(2)...), verdictReply("yes", "no:wrong year"), errReply("reason", abi.CodeBudget)}}
		res := meas(h, ff, `{"reason_call":true}`, 0.5, fCase)
		if got := mustScore(t, res); got != 0.5 || res.Reason != `1 of 2 claims count as faithful to the retrieval context. Failing claims: [2] "Statement 2." (no: wrong year).` {
			t.Errorf("score %v reason %q", got, res.Reason)
		}
		d := details(t, res)
		if d.ReasonSource != rag.ReasonFromItems || d.ReasonError == nil || d.ReasonError.Code != abi.CodeBudget || len(d.Warnings) != 1 || d.Usage.Calls != 2 {
			t.Errorf("details = %+v", d)
		}
		if !slices.ContainsFunc(h.Logs(), func(l string) bool {
			return strings.HasPrefix(l, slog.LevelWarn.String()+" ") && strings.Contains(l, "reason call failed")
		}) {
			t.Errorf("no warning logged: %+v", h.Logs())
		}
	})
}

// Truth extraction (faithfulness): sent in the same batch as the claims,
// limited, and the verdicts are judged against the truths.
func TestTruths(t *testing.T) {
	for _, tc := range []struct {
		name, cfg       string
		truths          []string
		promptHas       string
		verdictHas      []string
		verdictLacks    []string
		wantTruths      []string
		wantWarnings    int
		truthsPromptHas string
	}{
		{"limit enforced", `{"truths_limit":2}`, []string{"T one.", "T two.", "T three."}, "at most 2 truths",
			[]string{"1. T one.\n2. T two.\n<<<END RETRIEVAL CONTEXT>>>"}, []string{"T three.", "[1] Paris"}, []string{"T one.", "T two."}, 1, "[1] Paris is the capital of France.\n[2] The Eiffel Tower"},
		{"no limit", `{"extract_truths":true}`, []string{"T one.", "T two.", "T three."}, "",
			[]string{"1. T one.\n2. T two.\n3. T three."}, []string{"[1] Paris"}, []string{"T one.", "T two.", "T three."}, 0, "[1] Paris"},
		{"no truths: judge against the context", `{"extract_truths":true}`, nil, "",
			[]string{"[1] Paris is the capital of France.\n[2] The Eiffel Tower was completed in 1889."}, nil, nil, 1, "[1] Paris"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{listReply("claims", "C one.", "C two."), listReply("truths", tc.truths...), verdictReply("yes", "idk:x")}}
			res := meas(h, ff, tc.cfg, 0.5, fCase)
			if got := mustScore(t, res); got != 1 {
				t.Errorf("score = %v", got)
			}
			if len(h.Batches()) != 2 || len(h.Batches()[0]) != 2 || h.Batches()[0][0].Purpose != "claims" || h.Batches()[0][1].Purpose != "truths" {
				t.Fatalf("batches = %v; want [claims truths] then [verdicts]", h.Purposes())
			}
			tp := prompt(h.Batches()[0][1])
			if !strings.Contains(tp, tc.truthsPromptHas) || (tc.promptHas != "") != strings.Contains(tp, "at most") || !strings.Contains(tp, tc.promptHas) {
				t.Errorf("truths prompt:\n%s", tp)
			}
			if h.Batches()[0][1].SchemaName != "rag_truths" || *h.Batches()[0][1].Temperature != 0 {
				t.Errorf("truths request = %+v", h.Batches()[0][1])
			}
			vp := prompt(h.Batches()[1][0])
			for _, want := range tc.verdictHas {
				if !strings.Contains(vp, want) {
					t.Errorf("verdict prompt lacks %q:\n%s", want, vp)
				}
			}
			for _, bad := range tc.verdictLacks {
				if strings.Contains(vp, bad) {
					t.Errorf("verdict prompt has %q:\n%s", bad, vp)
				}
			}
			d := details(t, res)
			if !slices.Equal(d.Truths, tc.wantTruths) || len(d.Warnings) != tc.wantWarnings || d.Usage.Calls != 3 {
				t.Errorf("truths %q warnings %q calls %d", d.Truths, d.Warnings, d.Usage.Calls)
			}
		})
	}
}

// Judge faults come back as the host's *abi.Error, code intact, whichever
// call fails; a plain batch error becomes a judge_error.
func TestJudgeErrorsKeepTheirCode(t *testing.T) {
	plain := errors.New("connection reset")
	for _, tc := range []struct {
		name, kind, cfg string
		fault           reply
		code            abi.Code
		msg             string
		calls           int
	}{
		{"statements budget", ar, `{}`, errReply("statements", abi.CodeBudget), abi.CodeBudget, "scripted statements fault", 1},
		{"verdicts judge error", ar, `{}`, errReply("verdicts", abi.CodeJudge), abi.CodeJudge, "scripted verdicts fault", 2},
		{"claims cache miss", ff, `{}`, errReply("claims", abi.CodeCacheMiss), abi.CodeCacheMiss, "scripted claims fault", 1},
		{"truths timeout", ff, `{"truths_limit":3}`, errReply("truths", abi.CodeTimeout), abi.CodeTimeout, "scripted truths fault", 2},
		{"batch capability denied", ar, `{}`, reply{Err: abi.Errorf(abi.CodeCapability, "capability judge is not granted")}, abi.CodeCapability, "capability judge is not granted", 1},
		{"batch plain error", ff, `{}`, reply{Purpose: "verdicts", Err: plain}, abi.CodeJudge, "faithfulness: connection reset", 2},
		{"repair budget", ar, `{}`, reply{Purpose: "verdicts", Contains: []string{"Your reply is invalid"}, Resp: abi.JudgeResponse{Error: abi.Errorf(abi.CodeBudget, "judge-call budget")}}, abi.CodeBudget, "judge-call budget", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{tc.fault,
				listReply(extractPurpose(tc.kind), statements(2)...), listReply("truths", "t"),
				verdictReply("yes")}} // one verdict for two items: forces a repair
			res := meas(h, tc.kind, tc.cfg, 0.5, caseFor(tc.kind))
			if res.Error == nil || res.Error.Code != tc.code || res.Error.Message != tc.msg || res.Score != nil {
				t.Fatalf("error = %+v, want %s %q", res.Error, tc.code, tc.msg)
			}
			if res.Threshold != 0.5 {
				t.Errorf("threshold = %v", res.Threshold)
			}
			if len(h.Calls()) != tc.calls {
				t.Errorf("calls = %v, want %d", h.Purposes(), tc.calls)
			}
		})
	}
}

func TestMissingField(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		c     abi.TestCase
		field string
	}{
		{ff, abi.TestCase{ID: "x", ActualOutput: "Paris."}, abi.FieldRetrievalContext},
		{ff, abi.TestCase{ID: "x", ActualOutput: "Paris.", RetrievalContext: []string{}}, abi.FieldRetrievalContext},
		{ff, abi.TestCase{ID: "x", RetrievalContext: []string{"c"}}, abi.FieldActualOutput},
		{ar, abi.TestCase{ID: "x", ActualOutput: "Paris."}, abi.FieldInput},
		{ar, abi.TestCase{ID: "x", Input: "Capital?"}, abi.FieldActualOutput},
	} {
		h := &scripter{}
		res := meas(h, tc.kind, `{}`, 0.5, tc.c)
		if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != tc.field {
			t.Errorf("%s %+v: error = %+v, want missing_field %s", tc.kind, tc.c, res.Error, tc.field)
		}
		if len(h.Calls()) != 0 {
			t.Errorf("%s: %d judge calls for a case missing a field", tc.kind, len(h.Calls()))
		}
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		kind, cfg, field, msg string
	}{
		{ar, `{"idk_counts_as":"maybe"}`, "idk_counts_as", `idk_counts_as is "maybe"; want "yes" or "no"`},
		{ff, `{"idk_counts_as":"YES"}`, "idk_counts_as", `idk_counts_as is "YES"; want "yes" or "no"`},
		{ff, `{"truths_limit":-1}`, "truths_limit", "truths_limit is -1; want >= 0 (0: no limit)"},
		{ff, `{"truths_limit":"2"}`, "truths_limit", ""},
		{ar, `{"threshold":0.7}`, "threshold", `config: json: unknown field "threshold"`},
		{ar, `{"truths_limit":2}`, "truths_limit", `config: json: unknown field "truths_limit"`},
	} {
		h := &scripter{}
		res := meas(h, tc.kind, tc.cfg, 0.5, caseFor(tc.kind))
		if res.Error == nil || res.Error.Code != abi.CodeInvalidConfig || res.Error.Field != tc.field || (tc.msg != "" && res.Error.Message != tc.msg) {
			t.Errorf("%s %s: error = %+v", tc.kind, tc.cfg, res.Error)
		}
		if len(h.Calls()) != 0 {
			t.Errorf("%s %s: judge called", tc.kind, tc.cfg)
		}
	}
}

func TestDescriptor(t *testing.T) {
	d := rag.Plugin().Describe()
	if d.Name != "rag" || d.Version != "1.0.0" || d.ABIMajor != abi.Major || !d.Asks(abi.CapJudge) || len(d.Kinds) != 6 {
		t.Fatalf("descriptor = %+v", d)
	}
	for _, tc := range []struct {
		kind   string
		fields []string
		props  []string
	}{
		{ar, []string{"input", "actual_output"}, []string{"idk_counts_as", "strict_mode", "reason_call"}},
		{ff, []string{"actual_output", "retrieval_context"}, []string{"idk_counts_as", "strict_mode", "reason_call", "extract_truths", "truths_limit"}},
		{rag.KindContextualPrecision, []string{"input", "expected_output", "retrieval_context"}, []string{"strict_mode", "reason_call"}},
		{rag.KindContextualRecall, []string{"expected_output", "retrieval_context"}, []string{"strict_mode", "reason_call"}},
		{rag.KindContextualRelevancy, []string{"input", "retrieval_context"}, []string{"strict_mode", "reason_call"}},
		{rag.KindHallucination, []string{"actual_output", "context"}, []string{"strict_mode", "reason_call"}},
	} {
		k, ok := d.Kind(tc.kind)
		if !ok || k.Role != abi.RoleMetric || !slices.Equal(k.RequiredFields, tc.fields) || k.Description == "" || k.Prepare {
			t.Errorf("kind %s = %+v", tc.kind, k)
			continue
		}
		var sch struct {
			Properties           map[string]map[string]any `json:"properties"`
			AdditionalProperties *bool                     `json:"additionalProperties"`
			Required             []string                  `json:"required"`
		}
		if err := json.Unmarshal(k.ConfigSchema, &sch); err != nil {
			t.Fatal(err)
		}
		if sch.AdditionalProperties == nil || *sch.AdditionalProperties || len(sch.Required) != 0 || len(sch.Properties) != len(tc.props) {
			t.Errorf("%s schema = %s", tc.kind, k.ConfigSchema)
		}
		for _, p := range tc.props {
			if desc, _ := sch.Properties[p]["description"].(string); desc == "" {
				t.Errorf("%s: property %s has no description", tc.kind, p)
			}
		}
		if e := sch.Properties["idk_counts_as"]["enum"]; (tc.kind == ar || tc.kind == ff) && !reflect.DeepEqual(e, []any{"yes", "no"}) {
			t.Errorf("%s: idk_counts_as enum = %v", tc.kind, e)
		}
	}
}

// Two cases with the same actual output send byte-identical extraction
// requests, so the host's cache and singleflight can share them.
func TestExtractionRequestStable(t *testing.T) {
	var first []abi.Message
	for _, c := range []abi.TestCase{arCase, {ID: "other", Input: "Something else?", ActualOutput: arCase.ActualOutput}} {
		h := &scripter{Replies: []reply{listReply("statements", "s."), verdictReply("yes")}}
		mustScore(t, meas(h, ar, `{"strict_mode":true}`, 0.5, c))
		if first == nil {
			first = h.Calls()[0].Messages
		} else if !reflect.DeepEqual(first, h.Calls()[0].Messages) {
			t.Error("extraction prompt depends on more than the actual output")
		}
	}
}

package geval_test

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

var ctx = context.Background()

func cases(n int) []abi.TestCase {
	var cs []abi.TestCase
	for i := range n {
		cs = append(cs, abi.TestCase{
			ID:           string(rune('a' + i)),
			Input:        "What is the capital of France?",
			ActualOutput: "Paris is the capital; it has 2 million people.",
		})
	}
	return cs
}

func prep(t *testing.T, h *scripter, cfg string) *abi.PrepareResult {
	t.Helper()
	return geval.Plugin().Prepare(ctx, h, &abi.PrepareRequest{Kind: "geval", Metric: "m", Config: json.RawMessage(cfg), JudgeModel: "judge-1"})
}

func meas(t *testing.T, h *scripter, cfg string, prepared json.RawMessage, threshold float64, c abi.TestCase) *abi.MeasureResult {
	t.Helper()
	return geval.Plugin().Measure(ctx, h, &abi.MeasureRequest{Kind: "geval", Metric: "m", Config: json.RawMessage(cfg),
		Prepared: prepared, Threshold: threshold, JudgeModel: "judge-1", Case: c})
}

func details(t *testing.T, res *abi.MeasureResult) geval.Details {
	return scripted.Details[geval.Details](t, res)
}

func state(t *testing.T, raw json.RawMessage) geval.State {
	t.Helper()
	var s geval.State
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("state %s: %v", raw, err)
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

const criteriaCfg = `{"criteria":"The answer is correct and concise.","evaluation_params":["input","actual_output"]}`

// Criteria-only: Prepare makes exactly one steps call; Measure makes exactly
// one scoring call per case, using the prepared steps.
func TestCriteriaPrepareOnceMeasureOncePerCase(t *testing.T) {
	h := &scripter{Replies: []reply{
		stepsReply(false, "Check the answer against the question.", "Penalise padding."),
		scoreReply("Correct and concise.", 9, weighted(8.6, abi.ScoreCandidate{Value: 8, Probability: 0.4}, abi.ScoreCandidate{Value: 9, Probability: 0.6})),
	}}
	pr := prep(t, h, criteriaCfg)
	if pr.Error != nil {
		t.Fatalf("prepare: %v", pr.Error)
	}
	if got := h.Purposes(); !slices.Equal(got, []string{"steps"}) {
		t.Fatalf("prepare calls = %v, want exactly one steps call", got)
	}
	sreq := h.Calls()[0]
	if sreq.Temperature == nil || *sreq.Temperature != 0 {
		t.Errorf("steps temperature = %v, want 0", sreq.Temperature)
	}
	if sreq.Score != nil || sreq.TopLogprobs != 0 {
		t.Errorf("steps request asks for a score/logprobs: %+v", sreq)
	}
	var sch map[string]any
	if err := json.Unmarshal(sreq.Schema, &sch); err != nil || sch["properties"].(map[string]any)["steps"] == nil {
		t.Errorf("steps schema = %s", sreq.Schema)
	}
	for _, want := range []string{geval.PromptVersion, "The answer is correct and concise.", "Input and Actual Output"} {
		if !strings.Contains(prompt(sreq), want) {
			t.Errorf("steps prompt lacks %q:\n%s", want, prompt(sreq))
		}
	}
	st := state(t, pr.State)
	wantSteps := []string{"Check the answer against the question.", "Penalise padding."}
	if !slices.Equal(st.Steps, wantSteps) || st.Source != geval.StepsGenerated {
		t.Errorf("state = %+v", st)
	}
	var pd geval.PrepareDetails
	if err := json.Unmarshal(pr.Details, &pd); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pd.Steps, wantSteps) || pd.StepsSource != "generated" || pd.PromptVersion != geval.PromptVersion || pd.Usage == nil || pd.Usage.InputTokens != 100 {
		t.Errorf("prepare details = %+v", pd)
	}

	for i, c := range cases(3) {
		res := meas(t, h, criteriaCfg, pr.State, 0.5, c)
		if res.Error != nil {
			t.Fatalf("measure: %v", res.Error)
		}
		if got := len(h.Calls()); got != 2+i {
			t.Fatalf("after case %d: %d judge calls, want %d", i, got, 2+i)
		}
		if !near(*res.Score, 0.86) || !res.Success || res.Threshold != 0.5 || res.ScoreMode != "weighted" || res.Reason != "Correct and concise." {
			t.Errorf("result = score %v success %v threshold %v mode %q reason %q", *res.Score, res.Success, res.Threshold, res.ScoreMode, res.Reason)
		}
		d := details(t, res)
		if !slices.Equal(d.Steps, wantSteps) || d.StepsSource != "generated" || d.RawScore != 9 || !near(d.WeightedScore, 8.6) ||
			d.ScoreMode != "weighted" || d.ScoreCause != "" || len(d.Candidates) != 2 || d.ScoreRange != [2]int{0, 10} ||
			d.Usage == nil || d.Usage.InputTokens != 300 || d.Usage.OutputTokens != 30 || d.Usage.USD != 0.002 || d.StepsUsage != nil {
			t.Errorf("details = %+v", d)
		}
	}
	if got := h.Purposes(); !slices.Equal(got, []string{"steps", "score", "score", "score"}) {
		t.Errorf("calls = %v", got)
	}
	// The scoring request: logprob weighting over 0-10, reason then score.
	r := h.Calls()[1]
	if r.Score == nil || r.Score.Min != 0 || r.Score.Max != 10 || r.Score.Samples != 0 || r.TopLogprobs != geval.DefaultTopLogprobs {
		t.Errorf("score request: spec %+v top_logprobs %d", r.Score, r.TopLogprobs)
	}
	if r.Temperature == nil || *r.Temperature != 0 {
		t.Errorf("score temperature = %v", r.Temperature)
	}
	if s := string(r.Schema); strings.Index(s, `"reason"`) > strings.Index(s, `"score"`) || !strings.Contains(s, `"minimum":0,"maximum":10`) {
		t.Errorf("score schema = %s", s)
	}
}

// The steps prompt is byte-identical across runs and configs that differ
// only in what the steps do not depend on, so the host cache serves it.
func TestStepsPromptStable(t *testing.T) {
	cfgs := []string{
		criteriaCfg,
		`{"name":"Correctness","criteria":"The answer is correct and concise.","evaluation_params":["input","actual_output"],"top_logprobs":5}`,
		`{"criteria":"The answer is correct and concise.","evaluation_params":["input","actual_output"],"rubric":[{"score_range":[0,4],"expected_outcome":"wrong"},{"score_range":[5,10],"expected_outcome":"right"}]}`,
	}
	var first []abi.Message
	for _, cfg := range cfgs {
		h := &scripter{Replies: []reply{stepsReply(false, "s")}}
		if pr := prep(t, h, cfg); pr.Error != nil {
			t.Fatalf("%s: %v", cfg, pr.Error)
		}
		if first == nil {
			first = h.Calls()[0].Messages
		} else if !reflect.DeepEqual(first, h.Calls()[0].Messages) {
			t.Errorf("steps prompt differs for %s", cfg)
		}
	}
}

func TestStepsSource(t *testing.T) {
	for _, tc := range []struct {
		name, cfg  string
		replies    []reply
		wantCalls  int
		wantSource string
	}{
		{"generated", criteriaCfg, []reply{stepsReply(false, "s1")}, 1, "generated"},
		{"cache", criteriaCfg, []reply{stepsReply(true, "s1")}, 1, "cache"},
		{"provided", `{"evaluation_steps":["s1","s2"],"evaluation_params":["actual_output"]}`, nil, 0, "provided"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: append(tc.replies, scoreReply("ok", 7, weighted(7)))}
			pr := prep(t, h, tc.cfg)
			if pr.Error != nil {
				t.Fatal(pr.Error)
			}
			if len(h.Calls()) != tc.wantCalls {
				t.Fatalf("prepare made %d judge calls, want %d", len(h.Calls()), tc.wantCalls)
			}
			if st := state(t, pr.State); st.Source != tc.wantSource {
				t.Errorf("state source = %q, want %q", st.Source, tc.wantSource)
			}
			var pd geval.PrepareDetails
			_ = json.Unmarshal(pr.Details, &pd)
			res := meas(t, h, tc.cfg, pr.State, 0.5, cases(1)[0])
			if res.Error != nil {
				t.Fatal(res.Error)
			}
			d := details(t, res)
			if d.StepsSource != tc.wantSource || pd.StepsSource != tc.wantSource {
				t.Errorf("steps_source = %q (prepare %q), want %q", d.StepsSource, pd.StepsSource, tc.wantSource)
			}
			if len(d.Warnings)+len(pd.Warnings) > 0 {
				t.Errorf("warnings %q / %q, want none", pd.Warnings, d.Warnings)
			}
		})
	}
}

// A caller that skips Prepare gets the steps generated inside Measure with
// the same request Prepare would send.
func TestMeasureWithoutPrepare(t *testing.T) {
	h := &scripter{Replies: []reply{stepsReply(false, "s1"), scoreReply("ok", 6, weighted(6))}}
	if pr := prep(t, h, criteriaCfg); pr.Error != nil {
		t.Fatal(pr.Error)
	}
	res := meas(t, h, criteriaCfg, nil, 0.5, cases(1)[0])
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if got := h.Purposes(); !slices.Equal(got, []string{"steps", "steps", "score"}) {
		t.Fatalf("calls = %v", got)
	}
	if !reflect.DeepEqual(h.Calls()[0], h.Calls()[1]) {
		t.Errorf("measure's steps request differs from prepare's:\n%+v\n%+v", h.Calls()[0], h.Calls()[1])
	}
	d := details(t, res)
	if d.StepsSource != "generated" || d.StepsUsage == nil || d.StepsUsage.InputTokens != 100 {
		t.Errorf("details = %+v", d)
	}
}

func TestStrictMode(t *testing.T) {
	cfg := `{"criteria":"The answer is correct.","evaluation_params":["input","actual_output"],"strict_mode":true}`
	for _, tc := range []struct {
		raw       int
		threshold float64
		wantScore float64
		wantPass  bool
	}{
		{1, 0.3, 1, true},
		{0, 0.3, 0, false},
		{0, 0, 0, false}, // a 0 threshold does not let a strict 0 pass
	} {
		h := &scripter{Replies: []reply{stepsReply(false, "s1"), strictReply("because", tc.raw)}}
		pr := prep(t, h, cfg)
		if pr.Error != nil {
			t.Fatal(pr.Error)
		}
		res := meas(t, h, cfg, pr.State, tc.threshold, cases(1)[0])
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		if *res.Score != tc.wantScore || res.Success != tc.wantPass || res.Threshold != 1 || res.ScoreMode != "raw" || res.Reason != "because" {
			t.Errorf("raw %d: score %v success %v threshold %v mode %q", tc.raw, *res.Score, res.Success, res.Threshold, res.ScoreMode)
		}
		d := details(t, res)
		if d.ScoreMode != "raw" || d.ScoreCause != geval.StrictCause || d.RawScore != tc.raw || d.ScoreRange != [2]int{0, 1} || !d.StrictMode {
			t.Errorf("details = %+v", d)
		}
		r := h.Calls()[1]
		if r.Score != nil || r.TopLogprobs != 0 {
			t.Errorf("strict request asks for weighting: spec %+v top %d", r.Score, r.TopLogprobs)
		}
		for _, want := range []string{"STRICTLY either 1 or 0", `"score": the integer score (1 or 0)`} {
			if !strings.Contains(prompt(r), want) {
				t.Errorf("strict prompt lacks %q:\n%s", want, prompt(r))
			}
		}
		if !strings.Contains(string(r.Schema), `"minimum":0,"maximum":1`) {
			t.Errorf("strict schema = %s", r.Schema)
		}
	}
	// A judge that answers outside {0,1} is a judge fault, not a score.
	h := &scripter{Replies: []reply{stepsReply(false, "s1"), strictReply("x", 7)}}
	pr := prep(t, h, cfg)
	if res := meas(t, h, cfg, pr.State, 0.5, cases(1)[0]); res.Error == nil || res.Error.Code != abi.CodeJudge {
		t.Errorf("strict score 7: error %v, want judge_error", res.Error)
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, field, msg string
	}{
		{"neither criteria nor steps", `{"evaluation_params":["input"]}`, "criteria", "give criteria or evaluation_steps"},
		{"no params", `{"criteria":"c"}`, "evaluation_params", "evaluation_params is required"},
		{"duplicate param", `{"criteria":"c","evaluation_params":["input","input"]}`, "evaluation_params", "twice"},
		{"empty step", `{"evaluation_steps":["a"," "],"evaluation_params":["input"]}`, "evaluation_steps", "evaluation_steps[1] is empty"},
		{"criteria and empty step", `{"criteria":"c","evaluation_steps":[" "],"evaluation_params":["input"]}`, "evaluation_steps", "evaluation_steps[0] is empty"},
		{"unknown field", `{"criteria":"c","evaluation_params":["input"],"threshold":0.5}`, "threshold", "unknown field"},
		{"overlapping rubric", `{"criteria":"c","evaluation_params":["input"],"rubric":[{"score_range":[0,5],"expected_outcome":"bad"},{"score_range":[5,10],"expected_outcome":"good"}]}`, "rubric", "rubric"},
		{"rubric band with one bound", `{"criteria":"c","evaluation_params":["input"],"rubric":[{"score_range":[0],"expected_outcome":"bad"}]}`, "rubric", "want [start, end]"},
		{"zero-width range", `{"criteria":"c","evaluation_params":["input"],"score_range":[3,3]}`, "score_range", "zero width"},
		{"reversed range", `{"criteria":"c","evaluation_params":["input"],"score_range":[5,1]}`, "score_range", "greater than min"},
		{"range differs from rubric", `{"criteria":"c","evaluation_params":["input"],"score_range":[0,10],"rubric":[{"score_range":[1,5],"expected_outcome":"x"}]}`, "score_range", "differs from the rubric"},
		{"strict with rubric", `{"criteria":"c","evaluation_params":["input"],"strict_mode":true,"rubric":[{"score_range":[0,10],"expected_outcome":"x"}]}`, "rubric", "strict_mode"},
		{"one sample", `{"criteria":"c","evaluation_params":["input"],"samples":1}`, "samples", ">= 2"},
		{"negative top_logprobs", `{"criteria":"c","evaluation_params":["input"],"top_logprobs":-1}`, "top_logprobs", ">= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{}
			pr := prep(t, h, tc.cfg)
			res := meas(t, h, tc.cfg, json.RawMessage(`{"steps":["s"],"source":"provided"}`), 0.5, cases(1)[0])
			for _, e := range []*abi.Error{pr.Error, res.Error} {
				if e == nil || e.Code != abi.CodeInvalidConfig || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
					t.Errorf("error = %+v, want invalid_config field %q containing %q", e, tc.field, tc.msg)
				}
			}
			if len(h.Calls()) != 0 {
				t.Errorf("%d judge calls on an invalid config", len(h.Calls()))
			}
		})
	}
}

// Both criteria and steps: the design says the steps win, with a warning
// (validate and run both see it), and no judge call is made for steps.
func TestCriteriaAndStepsStepsWin(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		warn      bool
	}{
		{"both", `{"criteria":"c","evaluation_steps":["s1","s2"],"evaluation_params":["input"]}`, true},
		{"steps only", `{"evaluation_steps":["s1","s2"],"evaluation_params":["input"]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{}
			pr := prep(t, h, tc.cfg)
			if pr.Error != nil {
				t.Fatalf("prepare error %v, want none", pr.Error)
			}
			var pd geval.PrepareDetails
			if err := json.Unmarshal(pr.Details, &pd); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(pd.Steps, "|"); got != "s1|s2" || pd.StepsSource != geval.StepsProvided {
				t.Errorf("steps %q from %q, want s1|s2 provided", got, pd.StepsSource)
			}
			got := strings.Contains(strings.Join(pd.Warnings, "\n"), "criteria ignored")
			if got != tc.warn {
				t.Errorf("warnings %q: criteria-ignored warning %v, want %v", pd.Warnings, got, tc.warn)
			}
			if len(h.Calls()) != 0 {
				t.Errorf("%d judge calls, want 0 (the steps are given)", len(h.Calls()))
			}
		})
	}
}

func TestRubricBandReported(t *testing.T) {
	cfg := `{"evaluation_steps":["Judge correctness."],"evaluation_params":["actual_output"],"rubric":[
		{"score_range":[0,3],"expected_outcome":"Wrong."},
		{"score_range":[4,7],"expected_outcome":"Partly right."},
		{"score_range":[8,10],"expected_outcome":"Right and complete."}]}`
	for _, tc := range []struct {
		value    float64
		wantBand [2]int
		wantOut  string
	}{
		{8.4, [2]int{8, 10}, "Right and complete."},
		{5, [2]int{4, 7}, "Partly right."},
		{1, [2]int{0, 3}, "Wrong."},
	} {
		h := &scripter{Replies: []reply{scoreReply("r", int(tc.value), weighted(tc.value))}}
		res := meas(t, h, cfg, nil, 0.5, cases(1)[0])
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		d := details(t, res)
		if d.RubricBand == nil || !slices.Equal(d.RubricBand.ScoreRange, tc.wantBand[:]) || d.RubricBand.ExpectedOutcome != tc.wantOut {
			t.Errorf("value %v: band %+v, want %v %q", tc.value, d.RubricBand, tc.wantBand, tc.wantOut)
		}
		p := prompt(h.Calls()[0])
		for _, want := range []string{"Rubric (score band: expected outcome):\n0-3: Wrong.\n4-7: Partly right.\n8-10: Right and complete.\n", "An integer from 0 to 10"} {
			if !strings.Contains(p, want) {
				t.Errorf("prompt lacks %q:\n%s", want, p)
			}
		}
	}
}

// The score range comes from the rubric or score_range; the score is
// normalised on it and the judge is told it.
func TestScoreRangeNormalisation(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		min, max  int
		value     float64
		threshold float64
		wantScore float64
		wantPass  bool
	}{
		{"explicit 1-5", `{"evaluation_steps":["s"],"evaluation_params":["actual_output"],"score_range":[1,5]}`, 1, 5, 4, 0.75, 0.75, true},
		{"explicit 1-5 below", `{"evaluation_steps":["s"],"evaluation_params":["actual_output"],"score_range":[1,5]}`, 1, 5, 3.8, 0.75, 0.7, false},
		{"rubric 1-4", `{"evaluation_steps":["s"],"evaluation_params":["actual_output"],"rubric":[{"score_range":[1,2],"expected_outcome":"bad"},{"score_range":[3,4],"expected_outcome":"good"}]}`, 1, 4, 2.5, 0.5, 0.5, true},
		{"default 0-10", `{"evaluation_steps":["s"],"evaluation_params":["actual_output"]}`, 0, 10, 2.5, 0.5, 0.25, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{scoreReply("r", int(tc.value), weighted(tc.value))}}
			res := meas(t, h, tc.cfg, nil, tc.threshold, cases(1)[0])
			if res.Error != nil {
				t.Fatal(res.Error)
			}
			if !near(*res.Score, tc.wantScore) || res.Success != tc.wantPass {
				t.Errorf("score %v success %v, want %v %v", *res.Score, res.Success, tc.wantScore, tc.wantPass)
			}
			r := h.Calls()[0]
			if r.Score == nil || r.Score.Min != tc.min || r.Score.Max != tc.max {
				t.Errorf("score spec %+v, want %d-%d", r.Score, tc.min, tc.max)
			}
			d := details(t, res)
			if d.ScoreRange != [2]int{tc.min, tc.max} {
				t.Errorf("score_range %v", d.ScoreRange)
			}
			for _, want := range []string{
				"An integer from " + itoa(tc.min) + " to " + itoa(tc.max),
				`"minimum":` + itoa(tc.min) + `,"maximum":` + itoa(tc.max),
			} {
				if !strings.Contains(prompt(r)+string(r.Schema), want) {
					t.Errorf("prompt/schema lack %q", want)
				}
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// Mode, cause, candidates and spread are reported exactly as the host gave them.
func TestScoreModeReportedAsReturned(t *testing.T) {
	for _, tc := range []struct {
		name string
		sr   abi.ScoreResult
		raw  int
	}{
		{"weighted", abi.ScoreResult{Value: 7.25, Mode: "weighted", Candidates: []abi.ScoreCandidate{{Value: 7, Probability: 0.75}, {Value: 8, Probability: 0.25}}}, 7},
		{"raw", abi.ScoreResult{Value: 6, Mode: "raw", Cause: "judge has no logprobs"}, 6},
		{"raw below 1%", abi.ScoreResult{Value: 3, Mode: "raw", Cause: "all candidates below 1%"}, 3},
		{"sampled", abi.ScoreResult{Value: 5.5, Mode: "sampled", Cause: "judge has no logprobs", Spread: 0.5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := `{"evaluation_steps":["s"],"evaluation_params":["actual_output"],"samples":3,"top_logprobs":5}`
			h := &scripter{Replies: []reply{scoreReply("r", tc.raw, tc.sr)}}
			res := meas(t, h, cfg, json.RawMessage(`{"steps":["s"],"source":"provided"}`), 0.5, cases(1)[0])
			if res.Error != nil {
				t.Fatal(res.Error)
			}
			d := details(t, res)
			if res.ScoreMode != tc.sr.Mode || d.ScoreMode != tc.sr.Mode || d.ScoreCause != tc.sr.Cause || d.RawScore != tc.raw ||
				d.WeightedScore != tc.sr.Value || !reflect.DeepEqual(d.Candidates, tc.sr.Candidates) || d.Spread != tc.sr.Spread {
				t.Errorf("mode %q details %+v, want %+v", res.ScoreMode, d, tc.sr)
			}
			if !near(*res.Score, tc.sr.Value/10) {
				t.Errorf("score %v", *res.Score)
			}
			if r := h.Calls()[0]; r.Score.Samples != 3 || r.TopLogprobs != 5 {
				t.Errorf("request samples %d top %d", r.Score.Samples, r.TopLogprobs)
			}
		})
	}
	// A reply in which the host located no score is a judge fault.
	h := &scripter{Replies: []reply{{Purpose: "score", Resp: abi.JudgeResponse{JSON: json.RawMessage(`{"reason":"r","score":5}`)}}}}
	res := meas(t, h, `{"evaluation_steps":["s"],"evaluation_params":["actual_output"]}`, nil, 0.5, cases(1)[0])
	if res.Error == nil || res.Error.Code != abi.CodeJudge {
		t.Errorf("no host score: %+v", res.Error)
	}
}

func TestMissingField(t *testing.T) {
	cfg := `{"evaluation_steps":["s"],"evaluation_params":["input","expected_output"]}`
	h := &scripter{}
	res := meas(t, h, cfg, nil, 0.5, cases(1)[0])
	if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != "expected_output" {
		t.Fatalf("error = %+v, want missing_field expected_output", res.Error)
	}
	if len(h.Calls()) != 0 {
		t.Errorf("%d judge calls for a case missing a field", len(h.Calls()))
	}
}

func TestJudgeErrorsKeepTheirCode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rep   reply
		steps bool // fault on the steps call (Prepare)
		code  abi.Code
	}{
		{"judge error", reply{Purpose: "score", Resp: abi.JudgeResponse{Error: &abi.Error{Code: abi.CodeJudge, Message: "unparseable after repair", Retryable: true}}}, false, abi.CodeJudge},
		{"budget", reply{Purpose: "score", Resp: abi.JudgeResponse{Error: abi.Errorf(abi.CodeBudget, "judge-token budget")}}, false, abi.CodeBudget},
		{"batch capability denied", reply{Err: abi.Errorf(abi.CodeCapability, "capability judge is not granted")}, false, abi.CodeCapability},
		{"steps call budget", reply{Purpose: "steps", Resp: abi.JudgeResponse{Error: abi.Errorf(abi.CodeBudget, "judge-call budget")}}, true, abi.CodeBudget},
		{"steps call no steps", reply{Purpose: "steps", Resp: abi.JudgeResponse{JSON: json.RawMessage(`{"steps":[]}`)}}, true, abi.CodeJudge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &scripter{Replies: []reply{tc.rep}}
			if tc.steps {
				pr := prep(t, h, criteriaCfg)
				if pr.Error == nil || pr.Error.Code != tc.code || pr.State != nil {
					t.Errorf("prepare error = %+v, want %s", pr.Error, tc.code)
				}
				return
			}
			res := meas(t, h, criteriaCfg, json.RawMessage(`{"steps":["s"],"source":"generated"}`), 0.5, cases(1)[0])
			if res.Error == nil || res.Error.Code != tc.code || res.Score != nil {
				t.Errorf("measure error = %+v, want %s", res.Error, tc.code)
			}
			if tc.rep.Resp.Error != nil && res.Error != nil && res.Error.Retryable != tc.rep.Resp.Error.Retryable {
				t.Errorf("retryable lost: %+v", res.Error)
			}
		})
	}
}

// Golden substrings of the scoring prompt.
func TestScoringPromptShape(t *testing.T) {
	cfg := `{"name":"Correctness","description":"Is the answer right?","criteria":"The answer is correct.",
		"evaluation_params":["input","actual_output","context","source_doc"]}`
	c := abi.TestCase{ID: "x", Input: "Q?", ActualOutput: "A with 3 facts.", Context: []string{"c1", "c2"},
		Extra: map[string]json.RawMessage{"source_doc": json.RawMessage(`"the doc"`)}}
	h := &scripter{Replies: []reply{scoreReply("r", 5, weighted(5))}}
	res := meas(t, h, cfg, json.RawMessage(`{"steps":["First step.","Second step."],"source":"generated"}`), 0.5, c)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	p := prompt(h.Calls()[0])
	for _, want := range []string{
		geval.PromptVersion,
		"Metric: Correctness\nDescription: Is the answer right?\n",
		"Evaluation criteria:\nThe answer is correct.\n",
		"Evaluation steps:\n1. First step.\n2. Second step.\n",
		"<<<BEGIN TEST CASE>>>\nInput:\nQ?\n\nActual Output:\nA with 3 facts.\n\nContext:\nc1\nc2\n\nSource Doc:\nthe doc\n<<<END TEST CASE>>>",
		"Input, Actual Output, Context and Source Doc",
		"An integer from 0 to 10, where 10 means the test case fully meets the evaluation steps and 0 means it does not meet them at all.",
		`1. "reason":`,
		`2. "score": the integer score (0 to 10).`,
		geval.ReasonFirstInstruction,
		"Do not state the score",
		`{"reason": "<your concise reason>", "score": <integer from 0 to 10>}`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("scoring prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Index(p, `"reason"`) > strings.Index(p, `"score"`) {
		t.Error(`"score" is mentioned before "reason"`)
	}
}

// reason: false asks for the score only, still in one call.
func TestNoReason(t *testing.T) {
	cfg := `{"evaluation_steps":["s"],"evaluation_params":["actual_output"],"reason":false}`
	b := json.RawMessage(`{"score":4}`)
	h := &scripter{Replies: []reply{{Purpose: "score", Resp: abi.JudgeResponse{JSON: b, Score: &abi.ScoreResult{Raw: 4, Value: 4, Mode: "weighted"}}}}}
	res := meas(t, h, cfg, nil, 0.5, cases(1)[0])
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if res.Reason != "" || len(h.Calls()) != 1 || strings.Contains(string(h.Calls()[0].Schema), "reason") {
		t.Errorf("reason %q calls %d schema %s", res.Reason, len(h.Calls()), h.Calls()[0].Schema)
	}
}

func TestDescriptor(t *testing.T) {
	d := geval.Plugin().Describe()
	if d.Name != "geval" || d.ABIMajor != abi.Major || !d.Asks(abi.CapJudge) {
		t.Fatalf("descriptor %+v", d)
	}
	k, ok := d.Kind("geval")
	if !ok || k.Role != abi.RoleMetric || !k.Prepare {
		t.Fatalf("kind %+v", k)
	}
	var s struct {
		Properties           map[string]map[string]any `json:"properties"`
		Required             []string                  `json:"required"`
		AdditionalProperties *bool                     `json:"additionalProperties"`
	}
	if err := json.Unmarshal(k.ConfigSchema, &s); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"name", "description", "criteria", "evaluation_steps", "evaluation_params", "rubric", "score_range", "strict_mode", "top_logprobs", "samples", "reason"} {
		if s.Properties[f] == nil || s.Properties[f]["description"] == nil {
			t.Errorf("schema property %q missing or undocumented: %v", f, s.Properties[f])
		}
	}
	if !slices.Equal(s.Required, []string{"evaluation_params"}) || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("required %v additionalProperties %v", s.Required, s.AdditionalProperties)
	}
	rubric, _ := json.Marshal(s.Properties["rubric"])
	if !strings.Contains(string(rubric), `"score_range"`) || !strings.Contains(string(rubric), `"expected_outcome"`) {
		t.Errorf("rubric schema %s", rubric)
	}
}

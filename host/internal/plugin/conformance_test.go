package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/plugins/agent"
	"github.com/agentanvil/anvil/plugins/content"
	dagkinds "github.com/agentanvil/anvil/plugins/dag"
	"github.com/agentanvil/anvil/plugins/geval"
	"github.com/agentanvil/anvil/plugins/rag"
	"github.com/agentanvil/anvil/sdk"
)

// TestConformanceTextcheck runs a plugin written only against package sdk
// in-process, as a sandboxed Wasm module and as a native process, and
// requires identical results: the transport must be invisible to a kind.
func TestConformanceTextcheck(t *testing.T) {
	ctx := context.Background()
	transports := map[string]Plugin{
		TransportInproc:  Inproc(textcheck.Plugin(), Options{}),
		TransportWasm:    load(t, "textcheck", Options{}),
		TransportProcess: loadProcess(t, "textcheck", Options{}),
	}
	for _, name := range []string{TransportWasm, TransportProcess} {
		if got, want := transports[name].Info().Descriptor, transports[TransportInproc].Info().Descriptor; !jsonEqual(t, got, want) {
			t.Fatalf("descriptors differ:\n%-7s %s\ninproc  %s", name, plugintest.MustJSON(t, got), plugintest.MustJSON(t, want))
		}
	}

	tc := func(actual, expected string) abi.TestCase {
		return abi.TestCase{ID: "c", Input: "q", ActualOutput: actual, ExpectedOutput: expected}
	}
	type want struct {
		score   float64 // metric kinds
		success bool
		verdict string // node kinds
		code    abi.Code
		field   string
	}
	metrics := []struct {
		name, kind, config string
		threshold          float64
		c                  abi.TestCase
		want               want
	}{
		{"equal", "exact_match", ``, 0, tc("Paris", "Paris"), want{score: 1, success: true}},
		{"differ", "exact_match", ``, 0, tc("Paris", "paris"), want{score: 0}},
		{"ignore case", "exact_match", `{"ignore_case":true}`, 0, tc("PARIS", "paris"), want{score: 1, success: true}},
		{"ignore case unicode", "exact_match", `{"ignore_case":true}`, 0, tc("ÉTÉ", "été"), want{score: 1, success: true}},
		{"trim", "exact_match", `{"trim":true}`, 0, tc("  Paris\n", "Paris"), want{score: 1, success: true}},
		{"no trim", "exact_match", `{}`, 0, tc("  Paris\n", "Paris"), want{score: 0}},
		{"threshold kept", "exact_match", ``, 0.5, tc("a", "a"), want{score: 1, success: true}},
		{"multibyte difference", "exact_match", ``, 0, tc("naïve café", "naïve cafe"), want{score: 0}},
		{"missing expected", "exact_match", ``, 0, tc("Paris", ""), want{code: abi.CodeMissingField, field: "expected_output"}},
		{"unknown config field", "exact_match", `{"ignorecase":true}`, 0, tc("a", "a"), want{code: abi.CodeInvalidConfig, field: "ignorecase"}},
		{"wrong config type", "exact_match", `{"trim":"yes"}`, 0, tc("a", "a"), want{code: abi.CodeInvalidConfig, field: "trim"}},
		{"json valid", "json_valid", ``, 0, tc(`{"a":1}`, ""), want{score: 1, success: true}},
		{"json scalar", "json_valid", ``, 0, tc(`42`, ""), want{score: 1, success: true}},
		{"json invalid", "json_valid", ``, 0, tc(`{"a":1,}`, ""), want{score: 0}},
		{"json keys present", "json_valid", `{"required_keys":["a","b"]}`, 0, tc(`{"a":1,"b":null}`, ""), want{score: 1, success: true}},
		{"json keys missing", "json_valid", `{"required_keys":["a","z","y"]}`, 0, tc(`{"a":1}`, ""), want{score: 0}},
		{"json keys on array", "json_valid", `{"required_keys":["a"]}`, 0, tc(`[1]`, ""), want{score: 0}},
		{"json missing output", "json_valid", ``, 0, tc("", ""), want{code: abi.CodeMissingField, field: "actual_output"}},
		{"unknown kind", "nope", ``, 0, tc("a", "a"), want{code: abi.CodeABI}},
		{"node kind as metric", "regex_match", ``, 0, tc("a", "a"), want{code: abi.CodeABI}},
	}
	for _, m := range metrics {
		t.Run("measure/"+m.name, func(t *testing.T) {
			req := &abi.MeasureRequest{Kind: m.kind, Metric: "m", Config: rawOrNil(m.config), Threshold: m.threshold, Case: m.c}
			res := agree(t, transports, func(p Plugin) (*abi.MeasureResult, error) { return p.Measure(ctx, nil, req) },
				func(r abi.MeasureResult) (abi.MeasureResult, *abi.Error) { e := r.Error; r.Error = nil; return r, e })
			if m.want.code != "" {
				if res.Error == nil || res.Error.Code != m.want.code || res.Error.Field != m.want.field {
					t.Fatalf("want error %s (field %q), got %s", m.want.code, m.want.field, plugintest.MustJSON(t, res))
				}
				if res.Error.Plugin != "textcheck@1.0.0" {
					t.Errorf("error names plugin %q", res.Error.Plugin)
				}
				return
			}
			if res.Error != nil || res.Score == nil || *res.Score != m.want.score || res.Success != m.want.success || res.Reason == "" {
				t.Fatalf("want score %v success %v, got %s", m.want.score, m.want.success, plugintest.MustJSON(t, res))
			}
		})
	}

	nodes := []struct {
		name, kind, config string
		verdicts           []string
		c                  abi.TestCase
		want               want
	}{
		{"json true", "json_valid", ``, bin, tc(`{"ok":true}`, ""), want{verdict: "true"}},
		{"json false", "json_valid", ``, bin, tc(`{ok}`, ""), want{verdict: "false"}},
		{"json other field", "json_valid", `{"field":"input"}`, bin, abi.TestCase{ID: "c", Input: `[1,2]`, ActualOutput: "x"}, want{verdict: "true"}},
		{"json extra field", "json_valid", `{"field":"payload","required_keys":["id"]}`, bin,
			abi.TestCase{ID: "c", Extra: map[string]json.RawMessage{"payload": json.RawMessage(`"{\"id\":7}"`)}}, want{verdict: "true"}},
		{"json missing field", "json_valid", `{"field":"input"}`, bin, abi.TestCase{ID: "c", ActualOutput: "x"}, want{code: abi.CodeMissingField, field: "input"}},
		{"regex match", "regex_match", `{"pattern":"\\b\\d{4}\\b"}`, bin, tc("born in 1912.", ""), want{verdict: "true"}},
		{"regex no match", "regex_match", `{"pattern":"^Paris$"}`, bin, tc("Paris, France", ""), want{verdict: "false"}},
		{"regex case flag", "regex_match", `{"pattern":"(?i)^paris"}`, bin, tc("PARIS", ""), want{verdict: "true"}},
		{"regex field", "regex_match", `{"pattern":"\\?$","field":"input"}`, bin, abi.TestCase{ID: "c", Input: "why?", ActualOutput: "x"}, want{verdict: "true"}},
		{"regex invalid", "regex_match", `{"pattern":"(unclosed"}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "pattern"}},
		{"regex missing pattern", "regex_match", `{}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "pattern"}},
		{"contains all", "contains_all", `{"substrings":["red","blue"]}`, bin, tc("red and blue", ""), want{verdict: "true"}},
		{"contains some", "contains_all", `{"substrings":["red","green","blue"]}`, bin, tc("red and blue", ""), want{verdict: "false"}},
		{"contains ignore case", "contains_all", `{"substrings":["RED"],"ignore_case":true}`, bin, tc("Red", ""), want{verdict: "true"}},
		{"contains case sensitive", "contains_all", `{"substrings":["RED"]}`, bin, tc("Red", ""), want{verdict: "false"}},
		{"contains empty list", "contains_all", `{"substrings":[]}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "substrings"}},
		{"contains empty string", "contains_all", `{"substrings":["a",""]}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "substrings"}},
		{"no verdict set given", "contains_all", `{"substrings":["x"]}`, nil, tc("x", ""), want{verdict: "true"}},
		{"metric kind as node", "exact_match", ``, bin, tc("x", "x"), want{code: abi.CodeABI}},
	}
	for _, n := range nodes {
		t.Run("node/"+n.name, func(t *testing.T) {
			req := &abi.NodeRequest{Kind: n.kind, NodeID: "n1", Config: rawOrNil(n.config), Verdicts: n.verdicts, Case: n.c}
			wa := agree(t, transports, func(p Plugin) (*abi.NodeResult, error) { return p.Node(ctx, nil, req) },
				func(r abi.NodeResult) (abi.NodeResult, *abi.Error) { e := r.Error; r.Error = nil; return r, e })
			if n.want.code != "" {
				if wa.Error == nil || wa.Error.Code != n.want.code || wa.Error.Field != n.want.field {
					t.Fatalf("want error %s (field %q), got %s", n.want.code, n.want.field, plugintest.MustJSON(t, wa))
				}
				return
			}
			if wa.Error != nil || wa.Verdict != n.want.verdict || wa.Reason == "" {
				t.Fatalf("want verdict %q, got %s", n.want.verdict, plugintest.MustJSON(t, wa))
			}
		})
	}
}

var bin = []string{"false", "true"}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// normalise drops what legitimately differs between transports: the digest.
func normalise(e *abi.Error) *abi.Error {
	if e == nil {
		return nil
	}
	c := *e
	c.Digest = ""
	return &c
}

// agree makes call on every transport and fails t unless the sandboxed
// ones' results equal inproc's: their errors as normalise leaves them,
// the rest as split leaves it without the error. It returns the process
// transport's result.
func agree[R any](t *testing.T, transports map[string]Plugin, call func(Plugin) (*R, error), split func(R) (R, *abi.Error)) *R {
	t.Helper()
	got := map[string]*R{}
	for name, p := range transports {
		res, err := call(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = res
	}
	in, inErr := split(*got[TransportInproc])
	for _, name := range []string{TransportWasm, TransportProcess} {
		o, oErr := split(*got[name])
		if !jsonEqual(t, normalise(inErr), normalise(oErr)) || !jsonEqual(t, in, o) {
			t.Fatalf("transports disagree:\ninproc  %s\n%-7s %s", plugintest.MustJSON(t, got[TransportInproc]), name, plugintest.MustJSON(t, got[name]))
		}
	}
	return got[TransportProcess]
}

func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	return plugintest.MustJSON(t, a) == plugintest.MustJSON(t, b)
}

// TestConformanceFirstParty runs every first-party kind — geval, the DAG
// node kinds, the rag statement metrics — in-process, as Wasm and as a
// native process, against the same deterministic judge, and requires
// identical outcomes (results, invocation errors, judge requests, logs):
// judge-using kinds, grants and budgets included.
func TestConformanceFirstParty(t *testing.T) {
	ctx := context.Background()
	optionSets := map[string]Options{
		"granted":   {Grants: Grants{Judge: true}},
		"ungranted": {},
		"budget1":   {Grants: Grants{Judge: true}, Limits: Limits{MaxJudgeCalls: 1}},
	}
	linked := map[string]*sdk.Plugin{"geval": geval.Plugin(), "dag": dagkinds.Plugin(), "rag": rag.Plugin(), "content": content.Plugin(), "agent": agent.Plugin()}
	type key struct{ plugin, opts, transport string }
	loaded := map[key]Plugin{}
	transports := []string{TransportInproc, TransportWasm, TransportProcess}
	// loadAll loads what the cases need, once, for the whole test (so a
	// plugin is closed when the test ends, not after its first case).
	loadAll := func(plugin, opts string) {
		for _, tr := range transports {
			k := key{plugin, opts, tr}
			if _, ok := loaded[k]; ok {
				continue
			}
			switch tr {
			case TransportInproc:
				loaded[k] = Inproc(linked[plugin], optionSets[opts])
			case TransportWasm:
				loaded[k] = load(t, plugin, optionSets[opts])
			case TransportProcess:
				loaded[k] = loadProcess(t, plugin, optionSets[opts])
			}
		}
	}

	params := func(fields ...string) []string { return fields }
	geCfg := func(m map[string]any) json.RawMessage {
		if _, ok := m["evaluation_params"]; !ok {
			m["evaluation_params"] = params("input", "actual_output")
		}
		b, _ := json.Marshal(m)
		return b
	}
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	qa := abi.TestCase{ID: "c1", Input: "What is the capital of France?", ActualOutput: "Paris is the capital. It has the Eiffel Tower.",
		ExpectedOutput: "Paris", RetrievalContext: []string{"Paris is the capital of France.", "The Eiffel Tower is in Paris."}}
	with := func(f func(c *abi.TestCase)) abi.TestCase { c := qa; f(&c); return c }
	withTools := with(func(c *abi.TestCase) {
		c.ToolsCalled = []abi.ToolCall{{Name: "search", Arguments: json.RawMessage(`{"q":"capital of France"}`), Output: json.RawMessage(`"Paris"`)}, {Name: "noop"}}
	})

	// prepareMeasure runs Prepare then Measure with its state, as the engine does.
	prepareMeasure := func(cfg json.RawMessage, c abi.TestCase) func(context.Context, Plugin, Services) any {
		return func(ctx context.Context, p Plugin, svc Services) any {
			prep, perr := p.Prepare(ctx, svc, &abi.PrepareRequest{Kind: "geval", Metric: "m", Config: cfg, JudgeModel: "oracle"})
			out := map[string]any{"prepare": prep, "prepare_err": errOutcome(perr)}
			if perr != nil || prep.Error != nil {
				return out
			}
			res, err := p.Measure(ctx, svc, &abi.MeasureRequest{Kind: "geval", Metric: "m", Config: cfg, Prepared: prep.State,
				Threshold: 0.5, JudgeModel: "oracle", Case: c})
			out["measure"], out["measure_err"] = res, errOutcome(err)
			return out
		}
	}
	measure := func(kind string, cfg json.RawMessage, c abi.TestCase) func(context.Context, Plugin, Services) any {
		return func(ctx context.Context, p Plugin, svc Services) any {
			res, err := p.Measure(ctx, svc, &abi.MeasureRequest{Kind: kind, Metric: "m", Config: cfg, Threshold: 0.5, JudgeModel: "oracle", Case: c})
			return map[string]any{"measure": res, "measure_err": errOutcome(err)}
		}
	}
	node := func(kind string, cfg json.RawMessage, verdicts []string, inputs []abi.NodeInput, c abi.TestCase) func(context.Context, Plugin, Services) any {
		return func(ctx context.Context, p Plugin, svc Services) any {
			res, err := p.Node(ctx, svc, &abi.NodeRequest{Kind: kind, NodeID: "n1", Config: cfg, Verdicts: verdicts, Inputs: inputs,
				JudgeModel: "oracle", Case: c})
			return map[string]any{"node": res, "node_err": errOutcome(err)}
		}
	}
	inputs := []abi.NodeInput{{NodeID: "t0", Label: "Headings", Output: "Intro; Usage"}, {NodeID: "t1", Output: "two"}}
	rubric := []map[string]any{
		{"score_range": []int{0, 3}, "expected_outcome": "wrong"},
		{"score_range": []int{4, 7}, "expected_outcome": "partly right"},
		{"score_range": []int{8, 10}, "expected_outcome": "right"},
	}

	cases := []struct {
		name, plugin, opts string
		run                func(context.Context, Plugin, Services) any
		want               abi.Code // the outcome's first error code; "" = none
	}{
		{"geval/criteria", "geval", "granted", prepareMeasure(geCfg(map[string]any{"criteria": "Is the answer correct?"}), qa), ""},
		{"geval/steps and rubric", "geval", "granted", prepareMeasure(geCfg(map[string]any{"evaluation_steps": []string{"Check the facts."}, "rubric": rubric}), qa), ""},
		{"geval/both criteria and steps", "geval", "granted", prepareMeasure(geCfg(map[string]any{"criteria": "c", "evaluation_steps": []string{"s"}}), qa), ""}, // the steps win, with a warning
		{"geval/strict", "geval", "granted", prepareMeasure(geCfg(map[string]any{"criteria": "Correct?", "strict_mode": true}), qa), ""},
		{"geval/score range", "geval", "granted", prepareMeasure(geCfg(map[string]any{"criteria": "Correct?", "score_range": []int{1, 5}, "top_logprobs": 5}), qa), ""},
		{"geval/no prepare", "geval", "granted", measure("geval", geCfg(map[string]any{"criteria": "Is the answer correct?"}), qa), ""},
		{"geval/missing field", "geval", "granted", prepareMeasure(geCfg(map[string]any{"criteria": "c", "evaluation_params": params("input", "context")}), qa), abi.CodeMissingField},
		{"geval/unknown config field", "geval", "granted", prepareMeasure(geCfg(map[string]any{"criteria": "c", "critera": "typo"}), qa), abi.CodeInvalidConfig},
		{"geval/invalid rubric", "geval", "granted", prepareMeasure(geCfg(map[string]any{"criteria": "c", "strict_mode": true, "rubric": rubric}), qa), abi.CodeInvalidConfig},
		{"geval/judge down", "geval", "granted", prepareMeasure(geCfg(map[string]any{"evaluation_steps": []string{"s"}}), with(func(c *abi.TestCase) { c.Input = "JUDGE_DOWN" })), abi.CodeJudge},
		{"geval/not granted", "geval", "ungranted", prepareMeasure(geCfg(map[string]any{"criteria": "c"}), qa), abi.CodeCapability},
		{"geval/budget", "geval", "budget1", measure("geval", geCfg(map[string]any{"criteria": "c"}), qa), abi.CodeBudget},

		{"rag/relevancy", "rag", "granted", measure("answer_relevancy", nil, qa), ""},
		{"rag/relevancy strict idk no", "rag", "granted", measure("answer_relevancy", raw(map[string]any{"idk_counts_as": "no", "strict_mode": true}), qa), ""},
		{"rag/relevancy reason call", "rag", "granted", measure("answer_relevancy", raw(map[string]any{"reason_call": true}), qa), ""},
		{"rag/relevancy repaired", "rag", "granted", measure("answer_relevancy", nil, with(func(c *abi.TestCase) { c.Input = "MISCOUNT please" })), ""},
		{"rag/relevancy nothing said", "rag", "granted", measure("answer_relevancy", nil, with(func(c *abi.TestCase) { c.ActualOutput = "NOTHING" })), ""},
		{"rag/faithfulness", "rag", "granted", measure("faithfulness", nil, qa), ""},
		{"rag/faithfulness truths", "rag", "granted", measure("faithfulness", raw(map[string]any{"truths_limit": 1}), qa), ""},
		{"rag/faithfulness missing context", "rag", "granted", measure("faithfulness", nil, with(func(c *abi.TestCase) { c.RetrievalContext = nil })), abi.CodeMissingField},
		{"rag/bad config", "rag", "granted", measure("faithfulness", raw(map[string]any{"idk_counts_as": "maybe"}), qa), abi.CodeInvalidConfig},
		{"rag/budget", "rag", "budget1", measure("answer_relevancy", nil, qa), abi.CodeBudget},
		{"rag/contextual precision", "rag", "granted", measure("contextual_precision", nil, qa), ""},
		{"rag/contextual precision strict reason call", "rag", "granted", measure("contextual_precision", raw(map[string]any{"strict_mode": true, "reason_call": true}), qa), ""},
		{"rag/contextual recall", "rag", "granted", measure("contextual_recall", nil, qa), ""},
		{"rag/contextual relevancy", "rag", "granted", measure("contextual_relevancy", nil, qa), ""},
		{"rag/hallucination", "rag", "granted", measure("hallucination", nil, with(func(c *abi.TestCase) { c.Context = []string{"Paris is the capital.", "It has 2 million people."} })), ""},
		{"rag/hallucination missing context", "rag", "granted", measure("hallucination", nil, qa), abi.CodeMissingField},

		{"content/bias", "content", "granted", measure("bias", nil, qa), ""},
		{"content/toxicity strict", "content", "granted", measure("toxicity", raw(map[string]any{"strict_mode": true}), qa), ""},
		{"content/pii leakage reason call", "content", "granted", measure("pii_leakage", raw(map[string]any{"reason_call": true}), qa), ""},
		{"content/prompt alignment", "content", "granted", measure("prompt_alignment", raw(map[string]any{"prompt_instructions": []string{"Be brief.", "Name the city."}}), qa), ""},
		{"content/prompt alignment without instructions", "content", "granted", measure("prompt_alignment", nil, qa), abi.CodeInvalidConfig},
		{"content/summarization", "content", "granted", measure("summarization", raw(map[string]any{"n": 3}), qa), ""},
		{"content/summarization questions given", "content", "granted", measure("summarization", raw(map[string]any{"assessment_questions": []string{"Is Paris the capital?"}}), qa), ""},
		{"content/budget", "content", "budget1", measure("summarization", nil, qa), abi.CodeBudget},

		{"agent/argument correctness", "agent", "granted", measure("argument_correctness", nil, withTools), ""},
		{"agent/argument correctness strict reason call", "agent", "granted", measure("argument_correctness", raw(map[string]any{"strict_mode": true, "reason_call": true}), withTools), ""},
		{"agent/argument correctness no tools", "agent", "granted", measure("argument_correctness", nil, qa), abi.CodeMissingField},
		{"agent/task completion", "agent", "granted", measure("task_completion", nil, withTools), ""},
		{"agent/task completion given task", "agent", "granted", measure("task_completion", raw(map[string]any{"task": "Answer geography questions."}), qa), ""},

		{"dag/task", "dag", "granted", node("task", raw(map[string]any{"instructions": "List the headings.", "output_label": "Headings", "params": params("actual_output")}), nil, inputs, qa), ""},
		{"dag/binary", "dag", "granted", node("binary", raw(map[string]any{"criteria": "Is it polite?", "params": params("input", "actual_output")}), bin, inputs, qa), ""},
		{"dag/choice", "dag", "granted", node("choice", raw(map[string]any{"criteria": "Which tone?"}), []string{"formal", "casual", "rude"}, inputs, qa), ""},
		{"dag/choice without verdicts", "dag", "granted", node("choice", raw(map[string]any{"criteria": "Which tone?"}), nil, nil, qa), abi.CodeInvalidConfig},
		{"dag/missing param", "dag", "granted", node("binary", raw(map[string]any{"criteria": "c", "params": params("context")}), bin, nil, qa), abi.CodeMissingField},
		{"dag/empty criteria", "dag", "granted", node("binary", raw(map[string]any{"criteria": " "}), bin, nil, qa), abi.CodeInvalidConfig},
		{"dag/judge down", "dag", "granted", node("task", raw(map[string]any{"instructions": "JUDGE_DOWN"}), nil, nil, qa), abi.CodeJudge},
		{"dag/not granted", "dag", "ungranted", node("binary", raw(map[string]any{"criteria": "c"}), bin, nil, qa), abi.CodeCapability},
	}
	for _, c := range cases {
		loadAll(c.plugin, c.opts)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var first string
			var firstOracle *oracle
			for _, tr := range transports {
				p := loaded[key{c.plugin, c.opts, tr}]
				svc := &oracle{}
				got := strings.ReplaceAll(plugintest.MustJSON(t, c.run(ctx, p, svc)), p.Info().Digest, "<digest>")
				if tr == TransportInproc {
					first, firstOracle = got, svc
					if code := firstCode(t, got); code != c.want {
						t.Fatalf("want outcome %q, got %q: %s", c.want, code, got)
					}
					continue
				}
				if got != first {
					t.Fatalf("transports disagree:\ninproc  %s\n%-7s %s", first, tr, got)
				}
				if a, b := plugintest.MustJSON(t, firstOracle.record()), plugintest.MustJSON(t, svc.record()); a != b {
					t.Fatalf("the judge saw different traffic:\ninproc  %s\n%-7s %s", a, tr, b)
				}
			}
		})
	}
	// The native guest is built with -race under -race: a data race in
	// the guest side of the transport would be on its stderr.
	for k, p := range loaded {
		if pp, ok := p.(interface{ CurrentStderr() string }); ok {
			if s := pp.CurrentStderr(); strings.Contains(s, "DATA RACE") {
				t.Errorf("%s (%s): the guest reported a data race:\n%s", k.plugin, k.opts, s)
			}
		}
	}
}

// errOutcome is an invocation error as an outcome compares it: the
// *abi.Error, or the text of any other error (which no case expects).
func errOutcome(err error) any {
	var ae *abi.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae
	}
	return map[string]string{"code": "not an abi.Error", "text": err.Error()}
}

// firstCode is the code of the first error in an outcome's JSON: an
// invocation error or a result's error.
func firstCode(t *testing.T, outcome string) abi.Code {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(outcome), &m); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"prepare", "measure", "node"} {
		var e struct {
			Code  abi.Code `json:"code"`
			Error *struct {
				Code abi.Code `json:"code"`
			} `json:"error"`
		}
		if b := m[step+"_err"]; len(b) > 0 && string(b) != "null" {
			_ = json.Unmarshal(b, &e)
			return e.Code
		}
		if b := m[step]; len(b) > 0 && string(b) != "null" {
			_ = json.Unmarshal(b, &e)
			if e.Error != nil {
				return e.Error.Code
			}
		}
	}
	return ""
}

// oracle is a deterministic judge: its answer is a function of the
// request alone (purpose, messages, schema), so every transport sees the
// same answers; it records every request and log line.
type oracle struct {
	mu       sync.Mutex
	requests []abi.JudgeRequest
	logs     []string
}

func (o *oracle) record() any {
	o.mu.Lock()
	defer o.mu.Unlock()
	return map[string]any{"requests": o.requests, "logs": o.logs}
}

func (o *oracle) Log(_ context.Context, pluginID string, rec abi.LogRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	attrs, _ := json.Marshal(rec.Attrs)
	o.logs = append(o.logs, pluginID+" "+rec.Level+" "+rec.Message+" "+string(attrs))
}

func (o *oracle) Judge(_ context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	o.mu.Lock()
	o.requests = append(o.requests, reqs...)
	o.mu.Unlock()
	out := make([]abi.JudgeResponse, len(reqs))
	for i, r := range reqs {
		out[i] = answer(r)
	}
	return out
}

// fromSchema is a value of the JSON Schema raw, varied by n: a list has
// minItems items (1 + n%3 when it sets none, at most maxItems), an enum's
// value is picked by n.
func fromSchema(raw json.RawMessage, n int) any {
	var s any
	_ = json.Unmarshal(raw, &s)
	var gen func(s any, depth int) any
	gen = func(s any, depth int) any {
		m, _ := s.(map[string]any)
		if e, ok := m["enum"].([]any); ok && len(e) > 0 {
			return e[(n>>depth)%len(e)]
		}
		switch m["type"] {
		case "object":
			out := map[string]any{}
			props, _ := m["properties"].(map[string]any)
			for k, p := range props {
				out[k] = gen(p, depth+1)
			}
			return out
		case "array":
			count := 1 + n%3
			if lo, ok := m["minItems"].(float64); ok && lo > 0 {
				count = int(lo)
			}
			if hi, ok := m["maxItems"].(float64); ok && int(hi) < count {
				count = int(hi)
			}
			out := make([]any, count)
			for i := range out {
				out[i] = gen(m["items"], depth+1+i)
			}
			return out
		}
		return fmt.Sprintf("oracle text %d-%d.", n%1000, depth)
	}
	return gen(s, 0)
}

// contextVerdicts answers the rag retrieval-context kinds' verdict calls
// from their schema: its count bound and its verdict enum.
func contextVerdicts(r abi.JudgeRequest, n int) any {
	var s struct {
		Properties map[string]struct {
			MinItems int `json:"minItems"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(r.Schema, &s)
	verdict := func(i int, values ...string) map[string]string {
		v := values[(n>>i)%len(values)]
		return map[string]string{"verdict": v, "reason": fmt.Sprintf("oracle says %s to %d", v, i)}
	}
	switch r.SchemaName {
	case "rag_sentence_verdicts":
		var out []map[string]string
		for i := range 1 + n%3 {
			v := verdict(i, "yes", "no")
			v["sentence"] = fmt.Sprintf("Sentence %d-%d.", n%1000, i)
			out = append(out, v)
		}
		return map[string]any{"verdicts": out}
	case "rag_node_statements":
		var nodes []map[string]any
		for i := range s.Properties["nodes"].MinItems {
			st := []map[string]string{}
			for j := range (n >> i) % 3 {
				v := verdict(i+j, "yes", "no")
				v["statement"] = fmt.Sprintf("Statement %d-%d.", i, j)
				st = append(st, v)
			}
			nodes = append(nodes, map[string]any{"statements": st})
		}
		return map[string]any{"nodes": nodes}
	}
	values := []string{"yes", "no"}
	if r.SchemaName == "rag_context_verdicts" {
		values = append(values, "idk")
	}
	var out []map[string]string
	for i := range s.Properties["verdicts"].MinItems {
		out = append(out, verdict(i, values...))
	}
	return map[string]any{"verdicts": out}
}

var itemCount = regexp.MustCompile(`(\d+) (?:statements|claims) an AI's answer`)

func answer(r abi.JudgeRequest) abi.JudgeResponse {
	var text strings.Builder
	for _, m := range r.Messages {
		text.WriteString(m.Role + ": " + m.Content + "\n")
	}
	prompt := text.String()
	h := fnv.New32a()
	h.Write([]byte(r.Purpose + "\n" + prompt))
	n := int(h.Sum32())
	usage := abi.Usage{Model: "oracle", InputTokens: len(prompt) / 4, OutputTokens: 10 + n%10, USD: 0.0001, Attempts: 1}
	reply := func(v any) abi.JudgeResponse {
		b, _ := json.Marshal(v)
		return abi.JudgeResponse{Content: string(b), JSON: b, Usage: usage}
	}
	if strings.Contains(prompt, "JUDGE_DOWN") {
		return abi.JudgeResponse{Error: &abi.Error{Code: abi.CodeJudge, Message: "oracle: the judge is down", Retryable: true}}
	}
	items := func(noun string) []string {
		if strings.Contains(prompt, "NOTHING") {
			return []string{}
		}
		out := make([]string, 1+n%3)
		for i := range out {
			out[i] = fmt.Sprintf("%s %d-%d.", noun, n%1000, i)
		}
		return out
	}
	switch r.Purpose {
	case "steps":
		return reply(map[string]any{"steps": []string{"Oracle step one.", "Oracle step two."}})
	case "score":
		if r.Score == nil { // strict mode: 0 or 1, no host score
			return reply(map[string]any{"reason": fmt.Sprintf("oracle reason %d", n%100), "score": n % 2})
		}
		lo, hi := r.Score.Min, r.Score.Max
		raw := lo + n%(hi-lo+1)
		resp := reply(map[string]any{"reason": fmt.Sprintf("oracle reason %d", n%100), "score": raw})
		sr := &abi.ScoreResult{Raw: raw, Value: float64(raw), Mode: abi.ScoreRaw, Cause: "oracle has no logprobs"}
		if raw < hi && r.TopLogprobs > 0 {
			sr.Value, sr.Mode, sr.Cause = float64(raw)+0.25, abi.ScoreWeighted, ""
			sr.Candidates = []abi.ScoreCandidate{{Value: raw, Probability: 0.75}, {Value: raw + 1, Probability: 0.25}}
		}
		resp.Score = sr
		return resp
	case "statements", "claims", "truths":
		return reply(map[string]any{r.Purpose: items(strings.TrimSuffix(r.Purpose, "s"))})
	case "task":
		if r.SchemaName == "agent_task" {
			return reply(map[string]any{"task": "Oracle task.", "outcome": fmt.Sprintf("Oracle outcome %d.", n%97), "score": float64(n%11) / 10, "reason": "oracle judged"})
		}
		return reply(map[string]any{"output": fmt.Sprintf("oracle output %d", n%97)})
	case "questions", "answers":
		return reply(fromSchema(r.Schema, n))
	case "verdicts":
		if strings.HasPrefix(r.SchemaName, "content_") || strings.HasPrefix(r.SchemaName, "agent_") {
			return reply(fromSchema(r.Schema, n))
		}
		if strings.HasPrefix(r.SchemaName, "rag_") && r.SchemaName != "rag_verdicts" {
			return reply(contextVerdicts(r, n))
		}
		m := itemCount.FindStringSubmatch(prompt)
		if m == nil {
			return abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "oracle: no item count in the verdicts prompt")}
		}
		count, _ := strconv.Atoi(m[1])
		if strings.Contains(prompt, "MISCOUNT") && !strings.Contains(prompt, "Your reply is invalid") {
			count-- // one short: the kind must repair
		}
		vs := make([]map[string]string, count)
		for i := range vs {
			v := []string{"yes", "no", "idk"}[(n>>i)%3]
			vs[i] = map[string]string{"verdict": v, "reason": fmt.Sprintf("oracle says %s to %d", v, i)}
		}
		return reply(map[string]any{"verdicts": vs})
	case "reason":
		return reply(map[string]any{"reason": fmt.Sprintf("oracle prose %d", n%100)})
	case "binary":
		return reply(map[string]any{"reason": "oracle decided", "verdict": n%2 == 0})
	case "choice":
		var s struct {
			Properties struct {
				Verdict struct {
					Enum []string `json:"enum"`
				} `json:"verdict"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(r.Schema, &s)
		if len(s.Properties.Verdict.Enum) == 0 {
			return abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "oracle: choice schema has no enum")}
		}
		return reply(map[string]any{"reason": "oracle chose", "verdict": s.Properties.Verdict.Enum[n%len(s.Properties.Verdict.Enum)]})
	}
	return abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "oracle: unexpected purpose %q", r.Purpose)}
}

// TestLogReachesServices checks a sandboxed guest's log line end to end
// (anvil_log, the process's log callback), attributed to its plugin.
func TestLogReachesServices(t *testing.T) {
	for _, tc := range []struct {
		transport, id string
		load          func(testing.TB, string, Options) Plugin
	}{
		{TransportWasm, "hostile@0.0.1", load},
		{TransportProcess, "hostile@0.0.2", loadProcess},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			p := tc.load(t, "hostile", Options{})
			svc := &plugintest.FakeServices{}
			res, err := p.Measure(context.Background(), svc, plugintest.HostileRequest("l1", map[string]any{"behaviour": "log"}))
			if err != nil || res.Error != nil {
				t.Fatalf("%v / %s", err, plugintest.MustJSON(t, res))
			}
			if len(svc.Logs) != 1 {
				t.Fatalf("want 1 log record, got %v", svc.Logs)
			}
			rec, id := svc.Logs[0], svc.LogIDs[0]
			if id != tc.id || rec.Level != "warn" || rec.Message != "hostile says hello" || rec.Attrs["case"] != "l1" || rec.Attrs["n"] != 3.0 {
				t.Errorf("got %s %+v", id, rec)
			}
		})
	}
}

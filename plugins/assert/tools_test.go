package assert_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/assert"
)

// call is a tool call: a name, then optional arguments and output JSON.
func call(name string, argsOut ...string) abi.ToolCall {
	c := abi.ToolCall{Name: name}
	if len(argsOut) > 0 && argsOut[0] != "" {
		c.Arguments = json.RawMessage(argsOut[0])
	}
	if len(argsOut) > 1 {
		c.Output = json.RawMessage(argsOut[1])
	}
	return c
}

func tools(cs ...abi.ToolCall) []abi.ToolCall { return cs }

func toolCase(expected, called []abi.ToolCall) abi.TestCase {
	return abi.TestCase{ID: "t1", ExpectedTools: expected, ToolsCalled: called}
}

func toolDetails(t *testing.T, res *abi.MeasureResult) assert.ToolDetails {
	t.Helper()
	var d assert.ToolDetails
	if err := json.Unmarshal(res.Details, &d); err != nil {
		t.Fatalf("details %s: %v", res.Details, err)
	}
	return d
}

// TestToolCorrectness: DeepEval's three scores, worked out by hand on each
// case (the arithmetic is in the comment), and the reason that names the
// problem.
func TestToolCorrectness(t *testing.T) {
	const args = `{"evaluation_params":["tool","input_parameters"]}`
	for _, tc := range []struct {
		name, cfg        string
		expected, called []abi.ToolCall
		score            float64
		reason           string
	}{
		// 1 of 2 expected tools called: 1 / 2.
		{"unordered missing", `{}`, tools(call("search"), call("calc")), tools(call("search")), 0.5,
			`Incomplete tool usage: missing tools ["calc"]; expected ["search" "calc"], called ["search"].`},
		{"unordered any order", `{}`, tools(call("a"), call("b")), tools(call("b"), call("a")), 1,
			`All expected tools ["a" "b"] were called (order not considered).`},
		// Two identical calls match two expected ones: 2 / 2 (DeepEval: 1 / 2).
		{"unordered repeated call", `{}`, tools(call("search", `{"q":"x"}`), call("search", `{"q":"x"}`)),
			tools(call("search", `{"q":"x"}`), call("search", `{"q":"x"}`)), 1, "were called"},
		// An extra call does not lower the unordered score: 1 / 1.
		{"unordered extra call", `{}`, tools(call("a")), tools(call("a"), call("b")), 1, ""},
		// Keys q, n, lang: only q equal → 1/3.
		{"arguments share", args, tools(call("search", `{"q":"paris","n":3}`)), tools(call("search", `{"q":"paris","n":5,"lang":"fr"}`)), 1.0 / 3,
			"partial argument matches search (expected #0, called #0) matches 0.3333"},
		// Keys a, b: b equal → 1/2; a nested, keys x, y: x equal → 1/2 of 1/2 → 0.75.
		{"arguments nested", args, tools(call("f", `{"a":{"x":1,"y":2},"b":1}`)), tools(call("f", `{"a":{"x":1,"y":3},"b":1}`)), 0.75, ""},
		// No arguments on either side is a full match (DeepEval: 0).
		{"arguments none", args, tools(call("now")), tools(call("now", `{}`)), 1, ""},
		// Numbers compare by value: 1 = 1.0 = 10e-1; key order is no difference.
		{"arguments numbers", args, tools(call("f", `{"n":1,"m":[2.50,"x"]}`)), tools(call("f", `{"m":[25e-1,"x"],"n":10e-1}`)), 1, ""},
		// Arguments that are not objects compare equal or not: 0 → unmatched.
		{"arguments not objects", args, tools(call("f", `[1,2]`)), tools(call("f", `[2,1]`)), 0, "unmatched tools f (expected #0)"},
		// The best match is taken, not the first of the name: 1 / 1.
		{"arguments best match", args, tools(call("s", `{"q":"a"}`)), tools(call("s", `{"q":"b"}`), call("s", `{"q":"a"}`)), 1, ""},
		{"output equal", `{"evaluation_params":["output"]}`, tools(call("w", "", `"22C"`)), tools(call("w", `{"c":"Paris"}`, `"22C"`)), 1, ""},
		{"output differs", `{"evaluation_params":["output"]}`, tools(call("w", "", `"22C"`)), tools(call("w", "", `"23C"`)), 0, ""},
		{"output absent", `{"evaluation_params":["output"]}`, tools(call("w", "", `"22C"`)), tools(call("w")), 0, ""},
		{"no call", `{}`, tools(call("a")), nil, 0, `missing tools ["a"]; expected ["a"], no tool was called.`},
		// Ordered: LCS of a,b,c and a,c,b is 2 → 2/3.
		{"ordered", `{"should_consider_ordering":true}`, tools(call("a"), call("b"), call("c")), tools(call("a"), call("c"), call("b")), 2.0 / 3,
			"Incorrect tool usage: out-of-order or mismatched tools"},
		{"ordered reversed", `{"should_consider_ordering":true}`, tools(call("a"), call("b")), tools(call("b"), call("a")), 0.5, ""},
		{"ordered correct", `{"should_consider_ordering":true}`, tools(call("a"), call("b")), tools(call("a"), call("x"), call("b")), 1,
			`Correct ordering: all expected tools ["a" "b"] were called in the expected order.`},
		// s matches half its arguments (q of q, n), t fully: (0.5 + 1) / 2.
		{"ordered partial", `{"should_consider_ordering":true,"evaluation_params":["input_parameters"]}`,
			tools(call("s", `{"q":"x","n":1}`), call("t")), tools(call("s", `{"q":"x","n":2}`), call("t")), 0.75, ""},
		{"exact", `{"should_exact_match":true}`, tools(call("a"), call("b")), tools(call("a"), call("b")), 1,
			`Exact match: expected ["a" "b"], called ["a" "b"].`},
		{"exact extra", `{"should_exact_match":true}`, tools(call("a"), call("b")), tools(call("a"), call("b"), call("c")), 0,
			"2 tools expected, 3 called"},
		{"exact order", `{"should_exact_match":true,"should_consider_ordering":true}`, tools(call("a"), call("b")), tools(call("b"), call("a")), 0,
			`call 0 differs (expected "a", called "b")`},
		{"exact arguments", `{"should_exact_match":true,"evaluation_params":["input_parameters"]}`,
			tools(call("s", `{"q":"x"}`)), tools(call("s", `{"q":"x","n":1}`)), 0, "with other input_parameters"},
		{"strict", `{"strict_mode":true}`, tools(call("a"), call("b")), tools(call("a")), 0, ""},
		{"strict full", `{"strict_mode":true}`, tools(call("a"), call("b")), tools(call("b"), call("a")), 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := measure(assert.KindToolCorrectness, tc.cfg, 0.5, toolCase(tc.expected, tc.called))
			if res.Error != nil || res.Score == nil {
				t.Fatalf("error %v", res.Error)
			}
			if diff := *res.Score - tc.score; diff > 1e-12 || diff < -1e-12 || !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("score %v reason %q; want %v containing %q", *res.Score, res.Reason, tc.score, tc.reason)
			}
		})
	}
}

// TestToolCorrectnessDetails: the details name the matches, the formula
// and, under strict_mode, the threshold of 1.
func TestToolCorrectnessDetails(t *testing.T) {
	res := measure(assert.KindToolCorrectness, `{"strict_mode":true,"evaluation_params":["input_parameters"]}`, 0.5,
		toolCase(tools(call("s", `{"q":"x","n":1}`), call("t"), call("u")), tools(call("t"), call("s", `{"q":"x"}`))))
	d := toolDetails(t, res)
	want := `{"kind":"tool_correctness","mode":"unordered","evaluation_params":["tool","input_parameters"],"expected":["s","t","u"],"called":["t","s"],` +
		`"matches":[{"expected":0,"called":1,"name":"s","score":0.5},{"expected":1,"called":0,"name":"t","score":1}],"unmatched":[2],"missing":["u"],` +
		`"formula":"sum of best matches / expected = 1.5 / 3 = 0.5; strict_mode: 1 only if 0.5 is 1 → 0","strict_mode":true}`
	if string(res.Details) != want || res.Threshold != 1 || *res.Score != 0 || res.Success {
		t.Errorf("details %s\nwant    %s\nthreshold %v score %v success %v", res.Details, want, res.Threshold, *res.Score, res.Success)
	}
	if d.Mode != assert.ModeUnordered {
		t.Errorf("mode %q", d.Mode)
	}
}

// TestToolCorrectnessBadDataset: tool JSON that cannot be compared without
// guessing is a metric error naming the field and the item.
func TestToolCorrectnessBadDataset(t *testing.T) {
	many := make([]abi.ToolCall, 1001)
	for i := range many {
		many[i] = call("a")
	}
	for _, tc := range []struct {
		name             string
		expected, called []abi.ToolCall
		msg              string
	}{
		{"repeated key", tools(call("s", `{"q":1,"q":2}`)), nil, "expected_tools[0].arguments: jsontext: duplicate object member name"},
		{"two values", tools(call("s")), tools(call("s", `{} {}`)), "tools_called[0].arguments: more than one JSON value"},
		{"bad output", tools(call("s", "", `{"a":1,"a":2}`)), nil, "expected_tools[0].output: jsontext: duplicate"},
		{"too many", tools(call("a")), many, "tools_called lists 1001 tools; the limit is 1000"},
	} {
		res := measure(assert.KindToolCorrectness, `{"evaluation_params":["input_parameters","output"]}`, 0.5, toolCase(tc.expected, tc.called))
		if res.Error == nil || res.Error.Code != abi.CodeMetric || !strings.Contains(res.Error.Message, tc.msg) {
			t.Errorf("%s: error %+v; want a metric error containing %q", tc.name, res.Error, tc.msg)
		}
	}
}

// FuzzToolCorrectness: whatever the dataset's tool calls hold, every mode
// gives a score in [0,1] or a metric error, never a panic; a list against
// itself scores 1 in every mode; an exact match is a full match in the
// other two modes.
func FuzzToolCorrectness(f *testing.F) {
	f.Add("search", `{"q":"x","n":1}`, `"ok"`, "search", `{"n":1.0,"q":"x"}`, `"ok"`)
	f.Add("a", `{"a":{"b":[1,{"c":null}]}}`, ``, "a", `{"a":{"b":[1,{}]}}`, `null`)
	f.Add("a", `1e999999999999999999`, `-0.0`, "b", `[]`, `0`)
	f.Add("a", `{"a":1,"a":1}`, `"\ud800"`, "a", "\"\xff\"", `{}`)
	f.Fuzz(func(t *testing.T, n1, a1, o1, n2, a2, o2 string) {
		if n1 == "" || n2 == "" {
			return // the dataset reader refuses a nameless tool
		}
		one, two := call(n1, a1, o1), call(n2, a2, o2)
		if o1 == "" {
			one.Output = nil
		}
		if o2 == "" {
			two.Output = nil
		}
		list := tools(one, two, one)
		for _, mode := range []string{`"should_exact_match":true`, `"should_consider_ordering":true`, `"strict_mode":false`} {
			cfg := `{"evaluation_params":["input_parameters","output"],` + mode + `}`
			res := measure(assert.KindToolCorrectness, cfg, 0.5, toolCase(list, tools(two, one)))
			if res.Error != nil {
				// Bytes that are not JSON at all make the list unreadable
				// to the ABI (missing_field); the dataset reader refuses
				// them before that.
				if res.Error.Code != abi.CodeMetric && res.Error.Code != abi.CodeMissingField {
					t.Fatalf("%s: error %+v; want a metric or missing_field error", cfg, res.Error)
				}
				continue
			}
			if s := *res.Score; s < 0 || s > 1 {
				t.Fatalf("%s: score %v outside [0,1]", cfg, s)
			}
			self := measure(assert.KindToolCorrectness, cfg, 0.5, toolCase(list, list))
			if self.Error != nil || *self.Score != 1 {
				t.Fatalf("%s: a list against itself: %+v %v", cfg, self.Error, self.Score)
			}
		}
	})
}

// BenchmarkToolCorrectnessBound: the largest lists tool_correctness
// accepts (1000 a side, one name, arguments compared), ordered — the
// table's every cell is a pair to compare.
func BenchmarkToolCorrectnessBound(b *testing.B) {
	list := make([]abi.ToolCall, 1000)
	for i := range list {
		list[i] = call("search", `{"q":"paris","page":`+strconv.Itoa(i)+`}`)
	}
	c := toolCase(list, list)
	for b.Loop() {
		res := measure(assert.KindToolCorrectness, `{"should_consider_ordering":true,"evaluation_params":["input_parameters"]}`, 0.5, c)
		if res.Error != nil || *res.Score != 1 {
			b.Fatalf("%+v", res)
		}
	}
}

// TestToolCorrectnessDeterministic: a score summed over argument keys
// is the same on every call (the keys are summed in order, not in map
// order, whose floating-point sums can differ in the last bit).
func TestToolCorrectnessDeterministic(t *testing.T) {
	// 3 keys equal, 7 objects matching in 1 of 3, 7, 9, 11, 13, 6 and 17 keys.
	exp := `{"e0":0,"e1":1,"e2":2,"n0":{"k0":0,"k1":1,"k2":2},"n1":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6},"n2":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8},"n3":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10},"n4":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12},"n5":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5},"n6":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16}}`
	got := `{"e0":0,"e1":1,"e2":2,"n0":{"k0":0,"k1":-1,"k2":-1},"n1":{"k0":0,"k1":-1,"k2":-1,"k3":-1,"k4":-1,"k5":-1,"k6":-1},"n2":{"k0":0,"k1":-1,"k2":-1,"k3":-1,"k4":-1,"k5":-1,"k6":-1,"k7":-1,"k8":-1},"n3":{"k0":0,"k1":-1,"k2":-1,"k3":-1,"k4":-1,"k5":-1,"k6":-1,"k7":-1,"k8":-1,"k9":-1,"k10":-1},"n4":{"k0":0,"k1":-1,"k2":-1,"k3":-1,"k4":-1,"k5":-1,"k6":-1,"k7":-1,"k8":-1,"k9":-1,"k10":-1,"k11":-1,"k12":-1},"n5":{"k0":0,"k1":-1,"k2":-1,"k3":-1,"k4":-1,"k5":-1},"n6":{"k0":0,"k1":-1,"k2":-1,"k3":-1,"k4":-1,"k5":-1,"k6":-1,"k7":-1,"k8":-1,"k9":-1,"k10":-1,"k11":-1,"k12":-1,"k13":-1,"k14":-1,"k15":-1,"k16":-1}}`
	c := toolCase(tools(call("s", exp)), tools(call("s", got)))
	first := measure(assert.KindToolCorrectness, `{"evaluation_params":["input_parameters"]}`, 0.5, c)
	for range 200 {
		again := measure(assert.KindToolCorrectness, `{"evaluation_params":["input_parameters"]}`, 0.5, c)
		if *again.Score != *first.Score || string(again.Details) != string(first.Details) {
			t.Fatalf("two calls differ: %v %v", *first.Score, *again.Score)
		}
	}
}

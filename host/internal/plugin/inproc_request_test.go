package plugin

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// roundTrip is the request a linked kind decoded before
// measureRequestAsSent: json.Marshal, then json.Unmarshal.
func roundTrip(t *testing.T, req *abi.MeasureRequest) (abi.MeasureRequest, bool) {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		return abi.MeasureRequest{}, false
	}
	var out abi.MeasureRequest
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("the round trip does not decode its own encoding: %v\n%s", err, b)
	}
	return out, true
}

// checkAsSent fails when measureRequestAsSent takes req and gives other
// than the round trip, or takes one the round trip refuses.
func checkAsSent(t *testing.T, req *abi.MeasureRequest) bool {
	t.Helper()
	got, ok := measureRequestAsSent(req)
	want, encodes := roundTrip(t, req)
	if ok && !encodes {
		t.Fatalf("took a request that does not encode: %+v", req)
	}
	if ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("as sent:\n got %#v\nwant %#v", got, want)
	}
	return ok
}

func TestMeasureRequestAsSentIsTheRoundTrip(t *testing.T) {
	base := func() *abi.MeasureRequest {
		return &abi.MeasureRequest{Kind: "geval", Metric: "correctness", Threshold: 0.5, JudgeModel: "gpt-4o-mini",
			Config:   json.RawMessage(`{"criteria": "Is it <correct> & complete?", "params": ["input"]}`),
			Prepared: json.RawMessage(`{"steps":["a","b"]}`),
			Case: abi.TestCase{ID: "c1", Input: "What is 2+2? <b>", ActualOutput: "4 — «four»\u2028", ExpectedOutput: "4",
				Context: []string{"x", ""}, RetrievalContext: []string{},
				ToolsCalled: []abi.ToolCall{{Name: "calc", Arguments: json.RawMessage(` {"a" : 1} `)}, {Name: ""}},
				Extra:       map[string]json.RawMessage{"k": json.RawMessage(`[1, 2]`), "nil": nil, "s": json.RawMessage(`"<&>"`)}}}
	}
	nan := math.NaN()
	tests := []struct {
		name string
		edit func(*abi.MeasureRequest)
		fast bool
	}{
		{"ordinary", func(*abi.MeasureRequest) {}, true},
		{"zero", func(r *abi.MeasureRequest) { *r = abi.MeasureRequest{} }, true},
		{"empty lists and maps", func(r *abi.MeasureRequest) {
			r.Case.Context, r.Case.ToolsCalled, r.Case.Extra, r.Config = []string{}, []abi.ToolCall{}, map[string]json.RawMessage{}, json.RawMessage{}
		}, true},
		{"negative zero threshold", func(r *abi.MeasureRequest) { r.Threshold = math.Copysign(0, -1) }, true},
		{"tiny threshold", func(r *abi.MeasureRequest) { r.Threshold = 5e-324 }, true},
		{"NaN threshold", func(r *abi.MeasureRequest) { r.Threshold = nan }, false},
		{"infinite threshold", func(r *abi.MeasureRequest) { r.Threshold = math.Inf(-1) }, false},
		{"invalid UTF-8 in the input", func(r *abi.MeasureRequest) { r.Case.Input = "a\xffb" }, false},
		{"invalid UTF-8 in a context item", func(r *abi.MeasureRequest) { r.Case.Context = []string{"\xc3"} }, false},
		{"invalid UTF-8 in an extra key", func(r *abi.MeasureRequest) { r.Case.Extra = map[string]json.RawMessage{"\xff": json.RawMessage(`1`)} }, false},
		{"invalid UTF-8 inside a raw string", func(r *abi.MeasureRequest) { r.Config = json.RawMessage("\"\xff\"") }, true},
		{"config not JSON", func(r *abi.MeasureRequest) { r.Config = json.RawMessage(`{`) }, false},
		{"empty non-nil extra value", func(r *abi.MeasureRequest) { r.Case.Extra = map[string]json.RawMessage{"e": {}} }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := base()
			tc.edit(req)
			if fast := checkAsSent(t, req); fast != tc.fast {
				t.Errorf("taken without the round trip: %v; want %v", fast, tc.fast)
			}
		})
	}
}

// What the kind gets shares no memory the kind could change with the
// host's request.
func TestMeasureRequestAsSentIsACopy(t *testing.T) {
	req := &abi.MeasureRequest{Config: json.RawMessage(`{"a":1}`), Prepared: json.RawMessage(`[1]`),
		Case: abi.TestCase{Context: []string{"x"}, RetrievalContext: []string{"y"},
			ToolsCalled:   []abi.ToolCall{{Name: "t", Arguments: json.RawMessage(`{}`), Output: json.RawMessage(`2`)}},
			ExpectedTools: []abi.ToolCall{{Name: "u"}},
			Extra:         map[string]json.RawMessage{"k": json.RawMessage(`3`)}}}
	before, _ := roundTrip(t, req)
	got, ok := measureRequestAsSent(req)
	if !ok {
		t.Fatal("not taken")
	}
	got.Config[1], got.Prepared[1] = 'X', 'X'
	got.Case.Context[0], got.Case.RetrievalContext[0] = "changed", "changed"
	got.Case.ToolsCalled[0].Name, got.Case.ToolsCalled[0].Arguments[0], got.Case.ToolsCalled[0].Output[0] = "changed", 'X', 'X'
	got.Case.ExpectedTools[0].Name = "changed"
	got.Case.Extra["k"][0] = 'X'
	got.Case.Extra["new"] = nil
	if after, _ := roundTrip(t, req); !reflect.DeepEqual(after, before) {
		t.Errorf("the kind's changes reached the host's request:\n%#v\nwas\n%#v", after, before)
	}
}

// FuzzMeasureRequestAsSent: the copy against the JSON round trip it
// replaces, on any texts, raw values and threshold.
func FuzzMeasureRequestAsSent(f *testing.F) {
	f.Add("geval", "in <put>", "out\u2028", `{"a": [1, "<&>"]}`, `null`, "k", 0.5, uint8(0))
	f.Add("", "\xff", "", ``, `{`, "", math.Inf(1), uint8(255))
	f.Add("x", "", "y", ` [ ] `, `"\u00e9"`, "\xc3", -0.0, uint8(0x55))
	f.Fuzz(func(t *testing.T, kind, input, output, raw1, raw2, key string, threshold float64, shape uint8) {
		pick := func(bit uint8, raw string) json.RawMessage {
			switch {
			case shape&bit == 0:
				return json.RawMessage(raw)
			case raw == "":
				return nil
			}
			return json.RawMessage{}
		}
		req := &abi.MeasureRequest{Kind: kind, Metric: key, Threshold: threshold, JudgeModel: output,
			Config: pick(1, raw1), Prepared: pick(2, raw2),
			Case: abi.TestCase{ID: key, Input: input, ActualOutput: output, ExpectedOutput: kind}}
		if shape&4 != 0 {
			req.Case.Context = []string{input, output}
		}
		if shape&8 != 0 {
			req.Case.ToolsCalled = []abi.ToolCall{{Name: key, Arguments: pick(16, raw1), Output: pick(32, raw2)}}
		}
		if shape&64 != 0 {
			req.Case.Extra = map[string]json.RawMessage{key: pick(128, raw1), key + "2": pick(1, raw2)}
		}
		checkAsSent(t, req)
	})
}

// checkResultAsDecoded fails when measureResultAsDecoded takes src and
// gives other than decoding its encoding.
func checkResultAsDecoded(t *testing.T, src *abi.MeasureResult) bool {
	t.Helper()
	b, err := json.Marshal(src)
	if err != nil {
		return false // run never gets this far
	}
	var want abi.MeasureResult
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("does not decode its own encoding: %v", err)
	}
	var got abi.MeasureResult
	ok := measureResultAsDecoded(src, &got, false)
	if ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("as decoded:\n got %#v\nwant %#v\n%s", got, want, b)
	}
	if ok && got.Score != nil && math.Float64bits(*got.Score) != math.Float64bits(*want.Score) {
		t.Fatalf("score bits %x, decoded %x", math.Float64bits(*got.Score), math.Float64bits(*want.Score))
	}
	return ok
}

func TestMeasureResultAsDecodedIsTheDecoder(t *testing.T) {
	score, negZero := 0.7, math.Copysign(0, -1)
	tests := []struct {
		name string
		res  *abi.MeasureResult
		fast bool
	}{
		{"geval", &abi.MeasureResult{Score: &score, Success: true, Threshold: 0.5, Reason: "fine — «ok»", ScoreMode: "weighted",
			Details: json.RawMessage(`{"steps":["a \"b\" \\u003c"],"raw_score":7,"x":[1,2.5e-3,true,null]}`)}, true},
		{"nil", nil, false},
		{"zero", &abi.MeasureResult{}, true},
		{"negative zero", &abi.MeasureResult{Score: &negZero}, true},
		{"error", &abi.MeasureResult{Error: &abi.Error{Code: abi.CodeMetric, Message: "boom", Field: "input", Retryable: true}}, true},
		{"empty details", &abi.MeasureResult{Details: json.RawMessage{}}, true},
		{"details with spaces", &abi.MeasureResult{Details: json.RawMessage(`{"a": 1}`)}, false},
		{"details with a space in a string", &abi.MeasureResult{Details: json.RawMessage(`{"a":"b c"}`)}, true},
		{"details with <", &abi.MeasureResult{Details: json.RawMessage(`{"a":"<b>"}`)}, false},
		{"details with U+2028", &abi.MeasureResult{Details: json.RawMessage("{\"a\":\"\u2028\"}")}, false},
		{"details with invalid UTF-8", &abi.MeasureResult{Details: json.RawMessage("{\"a\":\"\xff\"}")}, true},
		{"details escaped quote then space", &abi.MeasureResult{Details: json.RawMessage(`{"a":"\" x"}`)}, true},
		{"reason invalid UTF-8", &abi.MeasureResult{Reason: "\xff"}, false},
		{"error message invalid UTF-8", &abi.MeasureResult{Error: &abi.Error{Message: "\xc3"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if fast := checkResultAsDecoded(t, tc.res); fast != tc.fast {
				t.Errorf("taken without decoding: %v; want %v", fast, tc.fast)
			}
		})
	}
	// The details are the host's own copy.
	src := &abi.MeasureResult{Details: json.RawMessage(`{"a":1}`)}
	var got abi.MeasureResult
	if !measureResultAsDecoded(src, &got, false) {
		t.Fatal("not taken")
	}
	src.Details[1] = 'X'
	if string(got.Details) != `{"a":1}` {
		t.Errorf("details changed with the kind's: %s", got.Details)
	}
}

// FuzzMeasureResultAsDecoded: the copy against the decoder it replaces.
func FuzzMeasureResultAsDecoded(f *testing.F) {
	f.Add(`{"a":"b c","d":[1,{"e":null}]}`, "reason", "weighted", "boom", 0.5, true, true)
	f.Add(" [ 1 ] ", "\xff", "", "", math.Copysign(0, -1), false, false)
	f.Add("\"<\u2028>\"", "", "", "\xc3", 1e-300, true, false)
	f.Fuzz(func(t *testing.T, details, reason, mode, msg string, score float64, withScore, withError bool) {
		res := &abi.MeasureResult{Reason: reason, ScoreMode: mode, Threshold: score, Details: json.RawMessage(details)}
		if withScore {
			res.Score = &score
		}
		if withError {
			res.Error = &abi.Error{Code: abi.CodeMetric, Message: msg, Stderr: reason}
		}
		checkResultAsDecoded(t, res)
	})
}

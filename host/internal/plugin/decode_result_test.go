package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/plugins/geval"
)

// plainMeasureResult has MeasureResult's fields and tags but is another
// type, so decodeStrict takes it to json.Unmarshal: the reference the
// fast path is held to, errors included.
type plainMeasureResult abi.MeasureResult

// realResults are results as real guests write them: textcheck's
// exact_match (equal; different, with details and escaped quotes) and
// json_valid, G-Eval's against the canned judge, and metric errors. A
// Go guest's encoder writes what json.Marshal writes.
func realResults(tb testing.TB) map[string][]byte {
	ctx := context.Background()
	text := Inproc(textcheck.Plugin(), Options{})
	g := Inproc(geval.Plugin(), Options{Grants: Grants{Judge: true}})
	out := map[string][]byte{}
	add := func(name string, res *abi.MeasureResult, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(name, err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			tb.Fatal(name, err)
		}
		out[name] = b
	}
	for name, req := range map[string]*abi.MeasureRequest{
		"equal": {Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c1", ActualOutput: "Paris", ExpectedOutput: "Paris"}},
		"different": {Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c2", ActualOutput: "Paris, France <b>é\u2028", ExpectedOutput: "Paris"}},
		"bench-case": benchCase,
		"json_valid": {Kind: "json_valid", Metric: "j",
			Case: abi.TestCase{ID: "c3", ActualOutput: `{"a":`}},
	} {
		res, err := text.Measure(ctx, nil, req)
		add(name, res, err)
	}
	res, err := g.Measure(ctx, newCannedJudge(), gevalBenchRequest())
	add("geval", res, err)
	add("error", &abi.MeasureResult{Error: &abi.Error{Code: abi.CodeMissingField, Field: "expected_output",
		Message: "exact_match needs expected_output"}}, nil)
	add("judge error", &abi.MeasureResult{Error: &abi.Error{Code: abi.CodeJudge, Retryable: true,
		Message: "geval: scoring reply: invalid character 'x' looking for beginning of value"}}, nil)
	return out
}

var measureResultSeeds = []string{
	`{}`, ` {"score":null,"success":null,"threshold":null,"reason":null,"score_mode":null,"details":null,"error":null} `,
	`{"score":-0,"threshold":-0.0}`, `{"score":1e-320,"threshold":4.9e-324}`, `{"score":1e-400}`, `{"score":1e400}`,
	`{"score":1.7976931348623157e308,"threshold":-2.2250738585072014E-308}`, `{"score":0.1e1,"threshold":123456789012345678901234567890}`,
	`{"score":01}`, `{"score":1.}`, `{"score":.5}`, `{"score":+1}`, `{"score":"0.5"}`, `{"success":1}`, `{"threshold":true}`,
	`{"reason":"a \"quoted\" \\ reason\n\u00e9 \u2028 \/ \b\f\r\t"}`, `{"reason":"\ud83d\ude00 \ud800 \udc00 \ud800\u0041 \ud800\ud800\udc00"}`,
	"{\"reason\":\"\xff \xed\xa0\x80 \xef\xbf\xbd caf\xc3\xa9 \xe2\x80\"}", `{"reason":"\u0000\u001f"}`, "{\"reason\":\"\x01\"}",
	`{"reason":"\q"}`, `{"reason":"\'"}`, `{"reason":"\u12"}`, `{"reason":"unterminated}`,
	`{"details":{ "a" : [ 1 , {"b":2} ] , "A":null }}`, `{"details": [] , "score":0.5}`, `{"details":"x"}`, `{"details":1e999}`,
	`{"details":{"k":1,"k":2}}`, `{"details":{"k":1,"K":2}}`, `{"details":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"details":{"a":}}`, `{"details":[1,]}`, `{"details":tru}`,
	`{"error":{}}`, `{"error":{"code":"trap","message":"m","plugin":"p","digest":"d","field":"f","stderr":"s","retryable":false}}`,
	`{"error":{"code":null,"retryable":null}}`, `{"error":"x"}`, `{"error":{"code":1}}`, `{"error":{"Code":"x"}}`, `{"error":{"other":1}}`,
	`{"Score":1}`, `{"sCORE":1}`, `{"ſcore":1}`, `{"sc\u006fre":1}`, `{"other":1}`, `{"score":1,"score":0}`, `{"score":1,"Score":0}`,
	`{"score":1}{}`, `{"score":1} x`, `[]`, `null`, ``, `{"score":1,}`, `{,}`, `{"score" 1}`,
}

// FuzzMeasureResultDecode holds decodeMeasureResult to json.Unmarshal on
// any input: when it answers, the result is json.Unmarshal's (floats bit
// for bit, Score's and Error's pointer-ness, Details' bytes, nothing
// sharing raw's memory); when it declines, it has not touched r. And
// decodeStrict, whose fast path it is, answers as it does without it.
func FuzzMeasureResultDecode(f *testing.F) {
	real := realResults(f)
	for _, name := range slices.Sorted(maps.Keys(real)) {
		f.Add(real[name])
	}
	for _, s := range measureResultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want abi.MeasureResult
		werr := json.Unmarshal(b, &want)
		raw := bytes.Clone(b)
		var got abi.MeasureResult
		if decodeMeasureResult(raw, &got) {
			clear(raw)
			if werr != nil {
				t.Fatalf("decoded %q, which json.Unmarshal refuses: %v", b, werr)
			}
			sameMeasureResult(t, b, &got, &want)
		} else if !reflect.DeepEqual(got, abi.MeasureResult{}) {
			t.Fatalf("declined %q but wrote %+v", b, got)
		}

		var strict abi.MeasureResult
		var ref plainMeasureResult
		serr, rerr := decodeStrict(b, &strict), decodeStrict(b, &ref)
		if errString(serr) != errString(rerr) {
			t.Fatalf("decodeStrict(%q): %v; without the fast path: %v", b, serr, rerr)
		}
		if serr == nil {
			sameMeasureResult(t, b, &strict, (*abi.MeasureResult)(&ref))
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func sameMeasureResult(t *testing.T, in []byte, got, want *abi.MeasureResult) {
	t.Helper()
	same := reflect.DeepEqual(got, want) &&
		math.Float64bits(got.Threshold) == math.Float64bits(want.Threshold) &&
		(got.Score == nil || math.Float64bits(*got.Score) == math.Float64bits(*want.Score))
	if !same {
		t.Fatalf("%q:\n got %s\nwant %s", in, describeResult(got), describeResult(want))
	}
}

func describeResult(r *abi.MeasureResult) string {
	score, e := "nil", "nil"
	if r.Score != nil {
		score = fmt.Sprintf("%v (%#x)", *r.Score, math.Float64bits(*r.Score))
	}
	if r.Error != nil {
		e = fmt.Sprintf("%+v", *r.Error)
	}
	return fmt.Sprintf("score %s, success %v, threshold %v (%#x), reason %q, score_mode %q, details %q (nil: %v), error %s",
		score, r.Success, r.Threshold, math.Float64bits(r.Threshold), r.Reason, r.ScoreMode, r.Details, r.Details == nil, e)
}

// TestDecodeMeasureResult pins what the fast path answers for notable
// inputs, and that decodeStrict's result and error are what they were
// without it.
func TestDecodeMeasureResult(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		fast     bool
		check    func(*abi.MeasureResult) bool
		err      string // decodeStrict's error; "" = decodes
	}{
		{name: "null details are the four bytes", in: `{"score":1,"details":null}`, fast: true,
			check: func(r *abi.MeasureResult) bool { return string(r.Details) == "null" && *r.Score == 1 }},
		{name: "nested details keep their inner space", in: "{\"details\" :\n\t{ \"a\" : [ 1 , {\"b\": \"\\u00e9\"} ] } ,\"success\":true}", fast: true,
			check: func(r *abi.MeasureResult) bool {
				return string(r.Details) == `{ "a" : [ 1 , {"b": "\u00e9"} ] }` && r.Success
			}},
		{name: "null score stays nil", in: `{"score":null,"threshold":0.5}`, fast: true,
			check: func(r *abi.MeasureResult) bool { return r.Score == nil && r.Threshold == 0.5 }},
		{name: "-0", in: `{"score":-0,"threshold":-0}`, fast: true,
			check: func(r *abi.MeasureResult) bool {
				return math.Signbit(*r.Score) && math.Signbit(r.Threshold)
			}},
		{name: "subnormal", in: `{"score":1e-320}`, fast: true,
			check: func(r *abi.MeasureResult) bool { return *r.Score == 1e-320 }},
		{name: "error object", in: `{"success":false,"threshold":0,"error":{"code":"missing_field","message":"needs \"expected_output\"","field":"expected_output","retryable":true}}`,
			fast: true, check: func(r *abi.MeasureResult) bool {
				return r.Error != nil && *r.Error == abi.Error{Code: abi.CodeMissingField, Message: `needs "expected_output"`,
					Field: "expected_output", Retryable: true}
			}},
		{name: "empty error object", in: `{"error":{}}`, fast: true,
			check: func(r *abi.MeasureResult) bool { return r.Error != nil && *r.Error == abi.Error{} }},
		{name: "escapes and invalid UTF-8", in: "{\"reason\":\"\\ud83d\\ude00 \\ud800\\u0041 \xff caf\xc3\xa9\"}", fast: true,
			check: func(r *abi.MeasureResult) bool { return r.Reason == "\U0001F600 \uFFFDA \uFFFD café" }},
		{name: "unknown key", in: `{"score":1,"note":"x"}`,
			check: func(r *abi.MeasureResult) bool { return *r.Score == 1 }},
		{name: "case variant key", in: `{"Score":0.5}`,
			check: func(r *abi.MeasureResult) bool { return *r.Score == 0.5 }},
		{name: "escaped key", in: `{"sc\u006fre":0.5}`,
			check: func(r *abi.MeasureResult) bool { return *r.Score == 0.5 }},
		{name: "case variant key in error", in: `{"error":{"Message":"m"}}`,
			check: func(r *abi.MeasureResult) bool { return r.Error.Message == "m" }},
		{name: "wrong type", in: `{"score":"0.5"}`, err: "$.score: JSON string does not fit float64"},
		{name: "wrong type in error", in: `{"error":{"code":"x","retryable":1}}`, err: "$.error.retryable: JSON number does not fit bool"},
		{name: "error not an object", in: `{"error":"x"}`, err: "$.error: JSON string does not fit abi.Error"},
		{name: "duplicate", in: `{"score":1,"score":0}`, err: `duplicate key "score" at $.score`},
		{name: "too large", in: `{"threshold":1e400}`, err: "number 1e400 at $.threshold does not fit a float64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.in)
			var fast abi.MeasureResult
			if got := decodeMeasureResult(raw, &fast); got != tc.fast {
				t.Fatalf("fast path answers %v, want %v", got, tc.fast)
			}
			var res abi.MeasureResult
			var ref plainMeasureResult
			err, rerr := decodeStrict(raw, &res), decodeStrict(raw, &ref)
			if errString(err) != tc.err || errString(rerr) != tc.err {
				t.Fatalf("decodeStrict: %v, without the fast path: %v; want %q", err, rerr, tc.err)
			}
			if err != nil {
				return
			}
			sameMeasureResult(t, raw, &res, (*abi.MeasureResult)(&ref))
			if !tc.check(&res) {
				t.Fatalf("%s", describeResult(&res))
			}
		})
	}
}

// TestDecodeMeasureResultMergesNothing: into a result that is not the
// zero value json.Unmarshal merges, so the fast path declines.
func TestDecodeMeasureResultMergesNothing(t *testing.T) {
	one := 1.0
	for name, r := range map[string]abi.MeasureResult{
		"score":         {Score: &one},
		"success":       {Success: true},
		"-0 threshold":  {Threshold: math.Copysign(0, -1)},
		"reason":        {Reason: "r"},
		"score mode":    {ScoreMode: "raw"},
		"empty details": {Details: json.RawMessage{}},
		"error":         {Error: &abi.Error{}},
	} {
		if decodeMeasureResult([]byte(`{"success":false}`), &r) {
			t.Errorf("%s: the fast path decoded into a result that holds one", name)
		}
	}
	if decodeMeasureResult([]byte(`{}`), nil) {
		t.Error("the fast path decoded into nil")
	}
}

// TestDecodeMeasureResultFields fails when MeasureResult or Error gains,
// loses or renames a field: the fast path and zeroMeasureResult name
// them one by one.
func TestDecodeMeasureResultFields(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[abi.MeasureResult](): "Score *float64 score,omitempty; Success bool success; Threshold float64 threshold; " +
			"Reason string reason,omitempty; ScoreMode string score_mode,omitempty; Details json.RawMessage details,omitempty; " +
			"Error *abi.Error error,omitempty; ",
		reflect.TypeFor[abi.Error](): "Code abi.Code code; Message string message; Plugin string plugin,omitempty; " +
			"Digest string digest,omitempty; Field string field,omitempty; Stderr string stderr,omitempty; " +
			"Retryable bool retryable,omitempty; ",
	} {
		var b strings.Builder
		for i := range typ.NumField() {
			f := typ.Field(i)
			b.WriteString(f.Name + " " + f.Type.String() + " " + f.Tag.Get("json") + "; ")
		}
		if b.String() != want {
			t.Errorf("%s is now\n%s\nwas\n%s\nupdate decodeMeasureResult and this test", typ, b.String(), want)
		}
	}
}

// TestDecodeMeasureResultRealResults: the fast path answers for what
// real guests write (or it is no faster).
func TestDecodeMeasureResultRealResults(t *testing.T) {
	for name, raw := range realResults(t) {
		var r abi.MeasureResult
		if !decodeMeasureResult(raw, &r) {
			t.Errorf("%s: the fast path declines %s", name, raw)
		}
	}
}

// BenchmarkDecodeMeasureResult is json.Unmarshal against the fast path
// on the results of realResults, into a result that is reused (in
// decodeStrict the caller's result is on the heap already). cpu-ns/op is
// the steadier number on a shared machine.
func BenchmarkDecodeMeasureResult(b *testing.B) {
	results := realResults(b)
	for _, name := range []string{"equal", "bench-case", "geval", "error"} {
		raw := results[name]
		for _, fast := range []bool{false, true} {
			sub := name + "/encoding_json"
			if fast {
				sub = name + "/fast"
			}
			b.Run(sub, func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				var r abi.MeasureResult
				runCPUMeasured(b, false, func() {
					r = abi.MeasureResult{}
					if fast && !decodeMeasureResult(raw, &r) {
						b.Fatal("declined ", string(raw))
					}
					if !fast {
						if err := json.Unmarshal(raw, &r); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

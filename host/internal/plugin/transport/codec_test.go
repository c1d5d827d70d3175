package transport_test

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/host/internal/plugin/inproc"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/plugins/geval"
)

func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // error substring; "" = decodes
	}{
		{"plain", `{"score":0.5,"success":true,"details":{"a":[1,{"b":2}],"A2":null}}`, ""},
		{"same name in sibling objects", `{"details":{"x":[{"k":1},{"k":2}],"y":{"k":3}}}`, ""},
		{"duplicate", `{"score":1,"score":0}`, `duplicate key "score" at /score`},
		{"duplicate by case", `{"reason":"a","REASON":"b"}`, `duplicate key "REASON" at /REASON`},
		{"duplicate by Unicode folding", `{"details":{"k":1,"\u212a":2}}`, "duplicate key \"\u212a\" at /details/\u212a"},
		{"duplicate in an array element", `{"details":[0,{"a":1,"a":1}]}`, `duplicate key "a" at /details/1/a`},
		{"duplicate after a nested object", `{"details":{"x":{}},"details":1}`, `duplicate key "details" at /details`},
		{"number past float64", `{"details":[1e309]}`, "number 1e309 at /details/0 does not fit a float64"},
		{"negative number past float64", `{"score":-1e400}`, "does not fit a float64"},
		{"tiny number rounds to zero", `{"score":1e-400}`, ""},
		// json v2 words its errors "cannot" or "unable to" at random, so
		// that no one depends on the words: match what follows.
		{"wrong type names the field", `{"score":0.5,"threshold":0.5,"error":{"code":"x","message":"m","retryable":1}}`, `unmarshal JSON number into Go bool within "/error/retryable"`},
		{"invalid UTF-8", "{\"reason\":\"caf\xe9\"}", "invalid UTF-8"},
		{"not an object", `[1]`, "want a JSON object"},
		{"trailing data", `{}{}`, "trailing data"},
		{"trailing garbage", `{} x`, "trailing data"},
		{"empty", ` `, "no output"},
		{"not JSON", `{"a":}`, "not JSON"},
		{"unterminated", `{"a":1`, "not JSON"},
		{"a name in another case is another member", `{"Score":0.5}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res abi.MeasureResult
			err := transport.DecodeStrict([]byte(tc.in), &res)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// TestDecodeStrictMatchesNamesExactly: a member decodes into the field
// whose name it spells exactly; another spelling is a member the host does
// not know, and ignored (encoding/json matched it without regard to case).
func TestDecodeStrictMatchesNamesExactly(t *testing.T) {
	var res abi.MeasureResult
	if err := transport.DecodeStrict([]byte(`{"Score":0.5,"SUCCESS":true,"reason":"r"}`), &res); err != nil {
		t.Fatal(err)
	}
	if res.Score != nil || res.Success || res.Reason != "r" {
		t.Fatalf("got score %v, success %v, reason %q; want only the reason", res.Score, res.Success, res.Reason)
	}
}

// realResults are results as real guests write them: textcheck's
// exact_match (equal; different, with details and escaped quotes) and
// json_valid, G-Eval's against the canned judge, and metric errors,
// encoded as the Go guest SDK encodes them.
func realResults(tb testing.TB) map[string][]byte {
	ctx := context.Background()
	text := inproc.New(textcheck.Plugin(), transport.Options{})
	g := inproc.New(geval.Plugin(), transport.Options{Grants: transport.Grants{Judge: true}})
	out := map[string][]byte{}
	add := func(name string, res *abi.MeasureResult, err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(name, err)
		}
		b, err := transport.EncodeMessage(res)
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
		"bench-case": plugintest.BenchCase,
		"json_valid": {Kind: "json_valid", Metric: "j",
			Case: abi.TestCase{ID: "c3", ActualOutput: `{"a":`}},
	} {
		res, err := text.Measure(ctx, nil, req)
		add(name, res, err)
	}
	res, err := g.Measure(ctx, plugintest.NewCannedJudge(), plugintest.GevalBenchRequest())
	add("geval", res, err)
	add("error", &abi.MeasureResult{Error: &abi.Error{Code: abi.CodeMissingField, Field: "expected_output",
		Message: "exact_match needs expected_output"}}, nil)
	return out
}

// FuzzDecodeStrict holds DecodeStrict to go-json-experiment's plain
// Unmarshal: what it accepts, Unmarshal accepts and decodes to the same
// value; what it refuses that Unmarshal accepts is refused by a rule of
// checkJSON's, which says so. Whatever it accepts encodes, and decodes
// again to what encodes the same.
func FuzzDecodeStrict(f *testing.F) {
	real := realResults(f)
	for _, name := range slices.Sorted(maps.Keys(real)) {
		f.Add(real[name])
	}
	for _, s := range []string{
		`{"score":0.5,"success":true,"details":{"a":[1,{"b":2}]}}`, `{"score":1,"Score":0}`, `{"score":1,"score":0}`,
		`{"a":{"b":{"c":[[[{"d":1e308}]]]}}}`, `{"details":{"k":1,"\u212a":2}}`, `{"reason":"\ud800"}`, `{} `, `{"a":1}{"b":2}`,
		`{"details":1e999}`, `{"score":-0}`, `{"error":{"code":"x","message":"m","retryable":null}}`, `{"details":null}`,
		`{"score":"0.5"}`, `{"threshold":true}`, "{\"reason\":\"\xff\"}", `[]`, `null`, `{"a":}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want abi.MeasureResult
		err := transport.DecodeStrict(b, &got)
		werr := json.Unmarshal(b, &want)
		switch {
		case err == nil && werr != nil:
			t.Fatalf("%q: accepted, json.Unmarshal refuses it: %v", b, werr)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%q: decoded %+v, json.Unmarshal %+v", b, got, want)
		case err != nil && werr == nil && !refusedByCheck(err):
			t.Fatalf("%q: refused (%v), json.Unmarshal accepts it and no rule of checkJSON's says why", b, err)
		case err != nil:
			return
		}
		again, err := transport.EncodeMessage(&got)
		if err != nil {
			t.Fatalf("accepted %q, which does not encode back: %v", b, err)
		}
		var back abi.MeasureResult
		if err := transport.DecodeStrict(again, &back); err != nil {
			t.Fatalf("accepted %q but not its re-encoding %s: %v", b, again, err)
		}
		if third, _ := transport.EncodeMessage(&back); string(third) != string(again) {
			t.Fatalf("%q: encodes as %s, then as %s", b, again, third)
		}
	})
}

func refusedByCheck(err error) bool {
	for _, rule := range []string{"differs from it only in case", "does not fit a float64", "want a JSON object", "trailing data", "no output"} {
		if strings.Contains(err.Error(), rule) {
			return true
		}
	}
	return false
}

// BenchmarkDecodeStrict is what the strict reading of a guest's result
// costs over a plain Unmarshal, on a result with 64 KiB of details.
func BenchmarkDecodeStrict(b *testing.B) {
	details := map[string]any{"steps": strings.Split(strings.Repeat("check the facts,", 2048), ","), "n": 3.5}
	raw, _ := json.Marshal(map[string]any{"score": 0.5, "success": true, "reason": "ok", "details": details})
	for _, bc := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"strict", transport.DecodeStrict}, {"unmarshal", func(b []byte, v any) error { return json.Unmarshal(b, v) }}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				var res abi.MeasureResult
				if err := bc.decode(raw, &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

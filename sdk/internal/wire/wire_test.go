package wire

import (
	v1 "encoding/json"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
)

// hostEncodings are how hosts write a request: encoding/json (hosts
// before go-json-experiment) and the host's encodeMessage now.
var hostEncodings = map[string]func(any) ([]byte, error){
	"encoding/json":      v1.Marshal,
	"go-json-experiment": func(v any) ([]byte, error) { return json.Marshal(v, jsontext.AllowInvalidUTF8(true)) },
}

// asOldSDK is what the SDK read from a request before go-json-experiment:
// encoding/json's Marshal and Unmarshal.
func asOldSDK[T any](t testing.TB, v *T) *T {
	b, err := v1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := v1.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameMeaning: a and b are equal but for how their raw JSON values are
// written (encoding/json escaped <, > and & in them, go-json-experiment
// does not): encoding/json writes both the same.
func sameMeaning(t testing.TB, a, b any) bool {
	ab, err := v1.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := v1.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ab) == string(bb) && reflect.TypeOf(a) == reflect.TypeOf(b)
}

func measureRequest(text string, threshold float64) *abi.MeasureRequest {
	return &abi.MeasureRequest{Kind: "k", Metric: "m", Config: v1.RawMessage(`{"a":[1,2.5,"<&>"],"b":{"c":null}}`),
		Prepared: v1.RawMessage(`{"steps":["x"]}`), Threshold: threshold, JudgeModel: "j",
		Case: abi.TestCase{ID: "c", Input: text, ActualOutput: text + "!", ExpectedOutput: "",
			Context: []string{text, ""}, RetrievalContext: []string{"r"},
			ToolsCalled:   []abi.ToolCall{{Name: "t", Arguments: v1.RawMessage(`{"x":1}`), Output: v1.RawMessage(`"o"`)}},
			ExpectedTools: []abi.ToolCall{{Name: "u"}},
			Extra:         map[string]v1.RawMessage{"tier": v1.RawMessage(`"gold"`), "n": v1.RawMessage(`null`)}}}
}

// TestDecodeWhatHostsWrite: a request from an old host or a new one
// decodes to what the SDK read before go-json-experiment.
func TestDecodeWhatHostsWrite(t *testing.T) {
	for name, encode := range hostEncodings {
		for _, req := range []*abi.MeasureRequest{
			measureRequest("plain", 0.5),
			measureRequest("line\nnext \"q\" \\ <b>&amp; é 😀 \u2028 \x00", 1e-7),
			{Kind: "k", Metric: "m", Case: abi.TestCase{ID: "c"}},
		} {
			b, err := encode(req)
			if err != nil {
				t.Fatal(name, err)
			}
			var got abi.MeasureRequest
			if err := Decode(b, &got); err != nil {
				t.Fatalf("%s: %s: %v", name, b, err)
			}
			if want := asOldSDK(t, req); !sameMeaning(t, &got, want) {
				t.Errorf("%s: %s\ndecodes to %+v\nwant       %+v", name, b, got, want)
			}
		}
	}
}

// TestEncodeReadByHosts: what the SDK writes now, a host of before
// go-json-experiment reads as it read what the SDK wrote then; text cut in
// the middle of a character goes out with U+FFFD, as then.
func TestEncodeReadByHosts(t *testing.T) {
	score := 0.25
	for _, res := range []*abi.MeasureResult{
		{Score: &score, Success: false, Threshold: 0.5, Reason: "differs: got \"a<b>\"", ScoreMode: "raw", Details: v1.RawMessage(`{ "n" : 3 }`)},
		{Threshold: 1, Reason: "cut \xe2\x80", Error: &abi.Error{Code: abi.CodeMetric, Message: "m", Field: "f"}},
		{},
	} {
		b, err := Encode(res)
		if err != nil {
			t.Fatal(err)
		}
		var got abi.MeasureResult
		if err := v1.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if want := asOldSDK(t, res); !sameMeaning(t, &got, want) {
			t.Errorf("%s\nreads as %+v\nwant     %+v", b, got, want)
		}
	}
}

// FuzzDecodeWhatHostsWrite: whatever text a case holds, a request from
// either host decodes to what the SDK read before.
func FuzzDecodeWhatHostsWrite(f *testing.F) {
	f.Add("plain", 0.5)
	f.Add("\x00\"\\<>&\u2028\xff\xed\xa0\x80 é", 1e300)
	f.Fuzz(func(t *testing.T, text string, threshold float64) {
		req := measureRequest(text, threshold)
		for name, encode := range hostEncodings {
			b, err := encode(req)
			if err != nil {
				return // NaN, ±Inf: no host sends them
			}
			var got abi.MeasureRequest
			if err := Decode(b, &got); err != nil {
				t.Fatalf("%s: %q: %v", name, b, err)
			}
			if want := asOldSDK(t, req); !sameMeaning(t, &got, want) {
				t.Fatalf("%s: %q\ndecodes to %+v\nwant       %+v", name, b, got, want)
			}
		}
	})
}

package guest

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/internal/jsonr"
)

// codecSeeds are requests as a host writes them, and near misses.
var codecSeeds = []string{
	`{"kind":"exact_match","metric":"m","threshold":0.5,"case":{"id":"c1","actual_output":"Paris","expected_output":"Paris"}}`,
	`{"kind":"k","metric":"m","config":{"ignore_case":true,"trim":true},"prepared":{"steps":["a","b"]},"threshold":1e-3,"judge_model":"gpt","case":{"id":"c\u00e9","input":"line\nnext \"q\" \\ \/ \t\b\f\r \ud83d\ude00 \ud800 x","actual_output":"ünïcödé text long enough to cross eight-byte words","expected_output":"","context":["a","b"],"retrieval_context":[],"tools_called":[{"name":"t","arguments":{"x":[1,2.5,-3e2,true,false,null,"s"]},"output":"o"}],"expected_tools":[],"extra":{"k":1,"k":{"n":null},"e":[]}}}`,
	` {"kind" : "k" , "case" : { } } `,
	`{"kind":"k","Kind":"K"}`, `{"kind":null}`, `{"config":null}`, `{"threshold":"1"}`, `{"threshold":1e400}`,
	`{"unknown":1}`, `{"kind":"a\u0000b"}`, `{"kind":"\x01"}`, `{"kind":"\'"}`, `{"kind":"a"}x`, `{"case":{"context":[1]}}`,
	`{"case":{"extra":{"a":}}}`, `{"threshold":-0.0}`, `{"threshold":01}`, `{"kind":"` + "\xff\xfe" + `"}`, `[]`, ``,
	`{"case":{"tools_called":[{"name":"t","extra":1}]}}`,
	`{"kind":"k","case":{"id":"c","turns":[{"role":"user","content":"hi \u00e9"},{"role":"assistant","content":"","tools_called":[{"name":"t","arguments":{"a":1}}],"retrieval_context":["r1","r2"]}],"scenario":"s","expected_outcome":"o","chatbot_role":"r","context":["c"]}}`,
	`{"case":{"turns":[]}}`, `{"case":{"turns":null}}`, `{"case":{"turns":[null]}}`, `{"case":{"turns":[{"role":null}]}}`,
	`{"case":{"turns":[{"role":"user","Content":"x"}]}}`, `{"case":{"turns":[{"role":"user","extra":1}]}}`,
	`{"case":{"turns":[{"role":"user","content":"a"}],"turns":[{"content":"b"}]}}`, `{"case":{"turns":{}}}`,
	`{"case":{"turns":[{"role":"user","content":"a","tools_called":[{"name":"x"}]}],"turns":[{"role":"assistant"}]}}`,
	`{"case":{"tools_called":[{"name":"a","output":1}],"tools_called":[{"name":"b"}]}}`, `{"case":{"scenario":1}}`, `{"case":{"extra":{"a":1},"extra":{"b":2}}}`, `{"case":{"chatbot_role":"r","chatbot_role":"s"}}`, `{"kind":"abcdefgh\"ijklmnop"}`, `{"kind":"abcdefghijklmn\\"}`,
}

// FuzzDecodeMeasureRequest holds the fast path to encoding/json: on any
// input, decodeMeasureRequest returns what json.Unmarshal returns — the
// same value, and an error exactly when it does.
func FuzzDecodeMeasureRequest(f *testing.F) {
	for _, s := range codecSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got abi.MeasureRequest
		werr := json.Unmarshal(b, &want)
		gerr := decodeMeasureRequest(b, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json says %v, decodeMeasureRequest says %v", b, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q:\nencoding/json        %#v\ndecodeMeasureRequest %#v", b, want, got)
		}
	})
}

// TestDecodeMeasureRequestFastPath: the requests a host writes take the
// fast path (else it would speed nothing up), and decode as encoding/json
// decodes them.
func TestDecodeMeasureRequestFastPath(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	for _, req := range []abi.MeasureRequest{
		{Kind: "exact_match", Metric: "m", Threshold: 0.5, Case: abi.TestCase{ID: "c1", ActualOutput: "Paris", ExpectedOutput: "Paris"}},
		{Kind: "k", Metric: "m", Config: json.RawMessage(`{"ignore_case":true}`), Threshold: 1,
			Case: abi.TestCase{ID: "c2", Input: long + "\n<b>&\"quoted\"</b>", ActualOutput: "naïve café " + long, ExpectedOutput: long,
				Context: []string{"x", "y"}, ToolsCalled: []abi.ToolCall{{Name: "t", Arguments: json.RawMessage(`{"a":[1,2]}`)}},
				Extra: map[string]json.RawMessage{"lang": json.RawMessage(`"en"`)}}},
		{Kind: "conversational_geval", Metric: "m", Threshold: 0.5,
			Case: abi.TestCase{ID: "c3", Turns: []abi.Turn{
				{Role: abi.RoleSystem, Content: "Be brief."},
				{Role: abi.RoleUser, Content: long},
				{Role: abi.RoleAssistant, Content: "ok", ToolsCalled: []abi.ToolCall{{Name: "t", Output: json.RawMessage(`[1]`)}}, RetrievalContext: []string{"r"}},
			}, Scenario: "s", ExpectedOutcome: "o", ChatbotRole: "r", Context: []string{"c"}}},
	} {
		b, err := json.Marshal(&req)
		if err != nil {
			t.Fatal(err)
		}
		var fast abi.MeasureRequest
		d := fastDecoder{jsonr.Reader{B: b}}
		if !d.measureRequest(&fast) {
			t.Fatalf("fast path declined a host's request: %s", b)
		}
		var want abi.MeasureRequest
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("fast path decoded %s\nas   %#v\nwant %#v", b, fast, want)
		}
	}
}

// FuzzEncodeMeasureResult holds encodeMeasureResult to json.Marshal, byte
// for byte, errors included.
func FuzzEncodeMeasureResult(f *testing.F) {
	f.Add(true, 0.5, false, 1.0, "actual_output equals expected_output", "", []byte(`{"first_difference":3}`))
	f.Add(false, 0.0, true, 0.0, "a <b> & \"c\"\n\t\x01 \u2028 é \xff", "weighted", []byte(`{"a":[1,"x y"]}`))
	f.Add(true, 1e-7, false, 1e21, "", "raw", []byte(`{"a":"<"}`))
	f.Add(true, math.NaN(), false, 0.5, "", "", []byte(nil))
	f.Add(true, -0.0, false, 123456789.123, "12345678abcdefgh<", "", []byte(`{"a" :1}`))
	f.Add(true, 0.25, false, 0.5, "", "", []byte(`{"a":1`))
	f.Add(true, 0.25, false, 0.5, "", "", []byte(`null`))
	f.Add(true, math.Copysign(0, -1), false, 1.0, "", "", []byte(nil)) // -0 is written "-0"
	f.Add(true, 1.0, true, 0.0, "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, hasScore bool, score float64, success bool, threshold float64, reason, mode string, details []byte) {
		r := &abi.MeasureResult{Success: success, Threshold: threshold, Reason: reason, ScoreMode: mode, Details: details}
		if hasScore {
			r.Score = &score
		}
		want, werr := json.Marshal(r)
		got, gerr := encodeMeasureResult(r)
		if (werr == nil) != (gerr == nil) || string(want) != string(got) {
			t.Fatalf("%#v:\njson.Marshal        %s (%v)\nencodeMeasureResult %s (%v)", r, want, werr, got, gerr)
		}
	})
}

// BenchmarkDecodeConversation: a 20-turn conversational request through
// the fast path, and through encoding/json (what a guest built before ABI
// minor 4 falls back to on the turns member it does not know).
func BenchmarkDecodeConversation(b *testing.B) {
	var turns []abi.Turn
	for i := range 20 {
		role := []string{abi.RoleUser, abi.RoleAssistant}[i%2]
		turns = append(turns, abi.Turn{Role: role, Content: strings.Repeat("a sentence of the conversation, ", 8)})
	}
	req := abi.MeasureRequest{Kind: "k", Metric: "m", Threshold: 0.5,
		Case: abi.TestCase{ID: "c", Turns: turns, Scenario: "s", ChatbotRole: "r"}}
	data, err := json.Marshal(&req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var r abi.MeasureRequest
			if err := decodeMeasureRequest(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var r abi.MeasureRequest
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

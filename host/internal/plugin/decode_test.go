package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // error substring; "" = decodes
	}{
		{"plain", `{"score":0.5,"success":true,"details":{"a":[1,{"b":2}],"A2":null}}`, ""},
		{"same key in sibling objects", `{"details":{"x":[{"k":1},{"k":2}],"y":{"k":3}}}`, ""},
		{"duplicate", `{"score":1,"score":0}`, `duplicate key "score" at $.score`},
		{"duplicate by case", `{"reason":"a","REASON":"b"}`, `duplicate key "REASON" at $.REASON`},
		{"duplicate by Unicode folding", `{"details":{"k":1,"\u212a":2}}`, "duplicate key \"\u212a\" at $.details.\u212a"},
		{"duplicate in an array element", `{"details":[0,{"a":1,"a":1}]}`, `duplicate key "a" at $.details[1].a`},
		{"duplicate after a nested object", `{"details":{"x":{}},"details":1}`, `duplicate key "details" at $.details`},
		{"number past float64", `{"details":[1e309]}`, "number 1e309 at $.details[0] does not fit a float64"},
		{"negative number past float64", `{"score":-1e400}`, "does not fit a float64"},
		{"tiny number rounds to zero", `{"score":1e-400}`, ""},
		{"wrong type names the field", `{"score":0.5,"threshold":0.5,"error":{"code":"x","message":"m","retryable":1}}`, "$.error.retryable: JSON number does not fit bool"},
		{"not an object", `[1]`, "want a JSON object"},
		{"trailing data", `{}{}`, "trailing data"},
		{"empty", ` `, "no output"},
		{"not JSON", `{"a":}`, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res abi.MeasureResult
			err := decodeStrict([]byte(tc.in), &res)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// FuzzDecodeStrict: whatever a guest writes, decodeStrict does not panic,
// and what it accepts is one valid JSON object without repeated keys,
// which survives a round trip through encoding/json unchanged in meaning.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"score":0.5,"success":true,"details":{"a":[1,{"b":2}]}}`,
		`{"score":1,"Score":0}`,
		`{"a":{"b":{"c":[[[{"d":1e308}]]]}}}`,
		`{"k":1,"\u212a":2}`,
		`{"x":"\ud800"}`,
		`{} `,
		`{"a":1}{"b":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v map[string]any
		if err := decodeStrict(b, &v); err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q, which does not encode back: %v", b, err)
		}
		var w map[string]any
		if err := decodeStrict(again, &w); err != nil {
			t.Fatalf("accepted %q but not its re-encoding %s: %v", b, again, err)
		}
	})
}

// BenchmarkDecodeStrict is what the strict reading of a guest's result
// costs over encoding/json alone, on a result with 64 KiB of details.
func BenchmarkDecodeStrict(b *testing.B) {
	details := map[string]any{"steps": strings.Split(strings.Repeat("check the facts,", 2048), ","), "n": 3.5}
	raw, _ := json.Marshal(map[string]any{"score": 0.5, "success": true, "reason": "ok", "details": details})
	for _, bc := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"strict", decodeStrict}, {"encoding_json", json.Unmarshal}} {
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

// FuzzQuickCheckJSON holds the fast path to the strict decoder it speeds
// up: whatever quickCheckJSON accepts, checkJSON accepts too, so
// decodeStrict accepts and refuses exactly what it did with checkJSON
// alone (a refusal always comes from checkJSON, with its message).
func FuzzQuickCheckJSON(f *testing.F) {
	for _, s := range quickCheckSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if quickCheckJSON(b) {
			if err := checkJSON(b); err != nil {
				t.Fatalf("quickCheckJSON accepted %q, checkJSON refuses it: %v", b, err)
			}
		}
	})
}

var quickCheckSeeds = []string{
	`{"score":0.5,"success":true,"threshold":1,"reason":"a \"quoted\" \\ reason\n\u00e9","details":{"a":[1,{"b":2}],"A2":null}}`,
	`{"score":1,"score":0}`, `{"reason":"a","REASON":"b"}`, `{"details":{"k":1,"\u212a":2}}`,
	`{"details":[0,{"a":1,"a":1}]}`, `{"details":{"x":{}},"details":1}`, `{"details":[1e309]}`, `{"score":-1e400}`,
	`{"score":1e-400}`, `[1]`, `{}{}`, `{} `, ` {"a":-0.0e+5}`, `{"a":}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`,
	`{"a":"\x01"}`, `{"a":"\ud800"}`, `{"a":"\uZZZZ"}`, `{"a":"\q"}`, `{"a":tru}`, `{"a":[1,]}`, `{"a":1,}`,
	`{"é":1,"É":2}`, `{"a\u0041":1,"aa":2}`, `{"a":123456789012345678901234567890}`, `{"a":[[[[[[[[]]]]]]]]}`,
}

// TestQuickCheckJSON pins the fast path's answers on the seeds: it must
// accept the common results (or it is no faster) and decline everything
// checkJSON refuses.
func TestQuickCheckJSON(t *testing.T) {
	for _, s := range quickCheckSeeds {
		quick, strict := quickCheckJSON([]byte(s)), checkJSON([]byte(s)) == nil
		if quick && !strict {
			t.Errorf("%s: quick accepts, checkJSON refuses", s)
		}
	}
	for _, s := range []string{
		`{"score":1,"success":true,"threshold":1,"reason":"actual_output equals expected_output"}`,
		`{"score":0,"success":false,"threshold":1,"reason":"differs at character 3: got \"abc\", want \"abd\"","details":{"first_difference":3}}`,
		`{"score":0.25,"details":{"x":[1.5e-3,-2,true,false,null,"s"]}}`,
		`{"a":123456789012345678901234567890}`,
	} {
		if !quickCheckJSON([]byte(s)) {
			t.Errorf("quick path declines a plain result: %s", s)
		}
	}
}

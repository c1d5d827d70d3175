package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// checkResultLen fails when measureResultLen takes res and gives other
// than the length of its encoding, or takes one that does not encode.
func checkResultLen(t *testing.T, res *abi.MeasureResult) bool {
	t.Helper()
	n, ok := measureResultLen(res)
	b, err := json.Marshal(res)
	if ok && err != nil {
		t.Fatalf("took a result that does not encode (%v): %#v", err, res)
	}
	if ok && n != len(b) {
		t.Fatalf("length %d, encoded %d: %s", n, len(b), b)
	}
	return ok
}

func TestMeasureResultLenIsTheEncodedLength(t *testing.T) {
	score, tiny, huge := 0.7, 1e-7, 1e21
	for _, tc := range []struct {
		name string
		res  *abi.MeasureResult
		fast bool
	}{
		{"geval", &abi.MeasureResult{Score: &score, Success: true, Threshold: 0.5, Reason: "fine — «ok» \"quoted\"\n<&>\u2028\u2029\x00\x1f\x7f\b\f\r\t\\",
			ScoreMode: "weighted", Details: json.RawMessage(`{"steps":["a \"b\" \\u003c"],"raw_score":7}`)}, true},
		{"nil", nil, false},
		{"zero", &abi.MeasureResult{}, true},
		{"exponents", &abi.MeasureResult{Score: &tiny, Threshold: huge}, true},
		{"NaN threshold", &abi.MeasureResult{Threshold: math.NaN()}, false},
		{"infinite score", &abi.MeasureResult{Score: &[]float64{math.Inf(-1)}[0]}, false},
		{"invalid UTF-8", &abi.MeasureResult{Reason: "a\xffb\xc3", ScoreMode: "\xe2\x80"}, true},
		{"error", &abi.MeasureResult{Error: &abi.Error{Code: abi.CodeMetric, Message: "boom", Plugin: "p@1", Digest: "sha256:x", Field: "input", Stderr: "<>", Retryable: true}}, true},
		{"empty error", &abi.MeasureResult{Error: &abi.Error{}}, true},
		{"details with spaces", &abi.MeasureResult{Details: json.RawMessage(`{"a": 1}`)}, false},
		{"invalid details", &abi.MeasureResult{Details: json.RawMessage(`{"a":}`)}, false},
		{"details with <", &abi.MeasureResult{Details: json.RawMessage(`"<"`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fast := checkResultLen(t, tc.res); fast != tc.fast {
				t.Errorf("measured without encoding: %v; want %v", fast, tc.fast)
			}
		})
	}
}

// FuzzMeasureResultLen: the length against json.Marshal's.
func FuzzMeasureResultLen(f *testing.F) {
	f.Add(`{"a":"b c","d":[1,{"e":null}]}`, "reason", "weighted", "boom", 0.5, 1.0, true, true, true)
	f.Add(" [ 1 ] ", "\xff<\u2028", "", "", math.Copysign(0, -1), 1e-7, false, false, false)
	f.Add("\"<\u2028>\"", "\x00\n", "", "\xc3", 1e-300, 1e21, true, false, true)
	f.Fuzz(func(t *testing.T, details, reason, mode, msg string, score, threshold float64, withScore, withError, success bool) {
		res := &abi.MeasureResult{Reason: reason, ScoreMode: mode, Threshold: threshold, Success: success, Details: json.RawMessage(details)}
		if withScore {
			res.Score = &score
		}
		if withError {
			res.Error = &abi.Error{Code: abi.Code(mode), Message: msg, Plugin: reason, Digest: details, Field: mode, Stderr: msg, Retryable: success}
		}
		checkResultLen(t, res)
	})
}

// FuzzRawAsSent: rawAsSent is json.Marshal of the RawMessage (taken only
// when that encodes), in memory of its own.
func FuzzRawAsSent(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a": 1}`, `"<&>"`, "\"\u2028\"", `[1,2.5e-3,true,null]`, `{`, ` 1 `, `"\xff"`, `"\u00e9"`, `1 2`, ``, `null`} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, omitempty bool) {
		got, ok := rawAsSent(json.RawMessage(raw), omitempty)
		if len(raw) == 0 {
			return // no encoding involved; TestMeasureRequestAsSentIsTheRoundTrip covers it
		}
		want, err := json.Marshal(json.RawMessage(raw))
		if ok != (err == nil) {
			t.Fatalf("%q: taken %v, json.Marshal error %v", raw, ok, err)
		}
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, json.Marshal %q", raw, got, want)
		}
		if ok && len(got) > 0 && &got[0] == &raw[0] {
			t.Fatalf("%q: shares the host's bytes", raw)
		}
	})
}

// TestInprocOutputCapExact: the cap refuses a result one byte over it
// and takes one exactly at it, measured without encoding or not.
func TestInprocOutputCapExact(t *testing.T) {
	ctx := context.Background()
	for _, details := range []string{`{"a":"` + strings.Repeat("x", 5000) + `"}`, `{"a": "` + strings.Repeat("<", 5000) + `"}`} {
		score := 0.25
		res := &abi.MeasureResult{Score: &score, Threshold: 0.5, Reason: "r \"q\" \u2028", ScoreMode: "raw", Details: json.RawMessage(details)}
		enc, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		kind := &sdk.MetricKind[struct{}]{Name: "fixed", Measure: func(context.Context, sdk.Host, *struct{}, *abi.MeasureRequest) (*abi.MeasureResult, error) {
			out := *res
			out.Details = append(json.RawMessage(nil), res.Details...)
			return &out, nil
		}}
		p := &sdk.Plugin{Name: "fixed", Version: "1", Kinds: []sdk.Kind{kind}}
		for _, max := range []int{len(enc) - 1, len(enc)} {
			ip := Inproc(p, Options{Limits: Limits{MaxOutputBytes: max}})
			_, err := ip.Measure(ctx, nil, &abi.MeasureRequest{Kind: "fixed", Metric: "m"})
			wantErr := max < len(enc)
			if (err != nil) != wantErr {
				t.Fatalf("max %d, result %d bytes: error %v", max, len(enc), err)
			}
			if wantErr && !strings.Contains(err.Error(), fmt.Sprintf("result is %d bytes, max_output_bytes is %d", len(enc), max)) {
				t.Errorf("max %d: %v", max, err)
			}
		}
	}
}

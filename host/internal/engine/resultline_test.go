package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// fastLines are lines the fast decoder must take (the writer's shape,
// with the edge cases it can produce), beside resultLines, which it may
// leave to encoding/json.
var fastLines = []string{
	`{"case_id":"a","config_hash":"h","metrics":[]}`,
	`{"case_id":"a\"b\\c\/d\n\t\r\b\f","config_hash":"h","metrics":[{"metric":"m","kind":"k","status":"failed","gated":false,"score":-0,"threshold":1e-3,"reason":"got \"x\"…, want \"y\"…","details":{"first_difference":0},"usage":{"requests":0,"calls":0,"http_attempts":0,"cache_hits":0,"input_tokens":0,"output_tokens":0,"usd":0},"latency_ms":1.113}]}`,
	`{"config_hash":"h","metrics":[{"latency_ms":2,"usage":{"usd":1.5E+2,"usage_unknown":1},"details":null,"verdict_note":"ü","error_class":"plugin","score_mode":"logprobs"},{}],"case_id":"é"}`,
	`{"case_id":"x","config_hash":"h","metrics":[{"details":[{"a":[[],{},"\u00e9\ud800",true,false,null,-1.5e-7]}],"score":12345678901234567890}]}`,
	`{"case_id":"\u00e9\ud83d\ude00\ud800\u0041\udc00x\ud83d","config_hash":"\u003c\u0026\u003e\u2028","metrics":[]}`,
}

// TestDecodeLineFastTakesWriterLines: what the writer writes takes the
// fast path (else the walks silently fall back to encoding/json's cost),
// and decodes to what encoding/json makes of it.
func TestDecodeLineFastTakesWriterLines(t *testing.T) {
	score := 0.019999999999999997
	written := []CaseResult{
		{CaseID: "case-000001", ConfigHash: "cacbb98fe7186626", Metrics: []MetricResult{{
			Metric: "exact", Kind: "exact_match", Status: StatusFailed, Score: &score, Threshold: 0.5,
			Reason:  "actual_output differs at character 0: got \"Mountain\"…, want \"But\"… <&>\u2028",
			Details: json.RawMessage(`{"first_difference":0,"s":["\u003c"]}`), LatencyMS: 1.113,
			Usage: JudgeUsage{Requests: 1, Calls: 2, Attempts: 3, CacheHits: 1, Replayed: 2, InputTokens: 684, OutputTokens: 36, USD: 0.00012419999999999998, UsageUnknown: 1},
		}, {
			Metric: "m2", Kind: "geval", Status: StatusError, ErrorClass: "judge", VerdictNote: "note", ScoreMode: "weighted", Gated: true,
			Threshold: math.SmallestNonzeroFloat64,
		}}},
		{CaseID: "d", ConfigHash: "h", Metrics: []MetricResult{}},
		// A cluster run's line: the identity and the worker.
		{CaseID: "e", ConfigHash: "h", Identity: "0123456789abcdef", CaseDigest: "fedcba9876543210", Worker: "host-42", Metrics: []MetricResult{}},
	}
	for _, r := range written {
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(&r); err != nil { // as resultsWriter.flush
			t.Fatal(err)
		}
		line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		checkFast(t, line, true)
	}
	for _, l := range fastLines {
		checkFast(t, []byte(l), true)
	}
	for _, l := range append(append([]string{}, resultLines...), badResultLines...) {
		checkFast(t, []byte(l), false)
	}
}

// checkFast holds decodeLineFast to encoding/json on line, in both modes;
// mustTake says it must not fall back.
func checkFast(t *testing.T, line []byte, mustTake bool) {
	t.Helper()
	var want CaseResult
	werr := json.Unmarshal(line, &want)
	for _, keep := range []bool{true, false} {
		var got CaseResult
		ok := decodeLineFast(line, &got, keep)
		if mustTake && !ok {
			t.Errorf("keepDetails %v: fell back on %s", keep, line)
			continue
		}
		if !ok {
			continue
		}
		if werr != nil {
			t.Fatalf("keepDetails %v: decoded %s, which encoding/json refuses: %v", keep, line, werr)
		}
		w := want
		if !keep {
			w = withoutDetails([]CaseResult{cloneResult(want)})[0]
		}
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("keepDetails %v: %s\n got %+v\nwant %+v", keep, line, got, w)
		}
	}
}

func cloneResult(r CaseResult) CaseResult {
	if r.Metrics != nil {
		r.Metrics = append(make([]MetricResult, 0, len(r.Metrics)), r.Metrics...)
	}
	return r
}

// FuzzDecodeLineFast: whatever the fast decoder accepts, encoding/json
// accepts and decodes to the same value.
func FuzzDecodeLineFast(f *testing.F) {
	for _, l := range append(append(append([]string{}, fastLines...), resultLines...), badResultLines...) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkFast(t, []byte(line), false)
	})
}

// datasetRecords are dataset lines as people write them; the first ones
// must split without encoding/json.
var datasetRecords = []string{
	`{"id": "a", "input": "q", "context": ["x", "y"], "tools_called": [{"name": "t", "arguments": {"k": [1, 2.5e3, -0]}}], "extra": {"k": null, "b": true}}`,
	"{ \"input\" :\t\"é ü\" ,\r\n \"expected_output\": \"x\\\"y\\u00e9\" , \"n\": 12 }",
	`{}`,
	`{"question": "q", "output": "o", "reference": "r", "contexts": "one"}`,
	// encoding/json decides these:
	`{"a": 1, "a": 2}`,
	`{"\u0061": 1}`,
	`{"a": 01}`,
	`{"a": 1,}`,
	`{"a": [1 2]}`,
	`{"a": "x` + "\x01" + `"}`,
	`[1]`,
	`{"a": 1} x`,
	"{\"\xff\": 1}",
	`{"a": tru}`,
	`{"a": 1 .5}`,
}

func TestSplitObjectFastTakesPlainRecords(t *testing.T) {
	for i, l := range datasetRecords {
		_, ok := splitObjectFast([]byte(l), nil)
		if want := i < 4; ok != want {
			t.Errorf("%s: fast %v; want %v", l, ok, want)
		}
		checkSplit(t, []byte(l))
	}
}

// checkSplit holds splitObjectFast to json.Unmarshal into a map of raw
// values.
func checkSplit(t *testing.T, raw []byte) {
	t.Helper()
	members, ok := splitObjectFast(raw, nil)
	if !ok {
		return
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("split %s, which encoding/json refuses: %v", raw, err)
	}
	got := map[string]json.RawMessage{}
	for _, m := range members {
		got[m.key] = m.val
	}
	if len(members) != len(want) || !reflect.DeepEqual(got, want) {
		t.Fatalf("split %s:\n got %q\nwant %q", raw, got, want)
	}
}

// FuzzSplitObjectFast: whatever the fast split accepts, encoding/json
// accepts and splits the same way.
func FuzzSplitObjectFast(f *testing.F) {
	for _, l := range datasetRecords {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkSplit(t, []byte(line))
	})
}

// FuzzHasControl: the eight-bytes-at-a-time check is the byte loop.
func FuzzHasControl(f *testing.F) {
	f.Add([]byte("plain text, no control"))
	f.Add([]byte("0123456789abcdef\x1f"))
	f.Add([]byte("\x00\xff\x80\x20\x7f\x9f\xa0 "))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := false
		for _, c := range b {
			want = want || c < 0x20
		}
		if got := hasControl(b); got != want {
			t.Fatalf("hasControl(%q) = %v", b, got)
		}
	})
}

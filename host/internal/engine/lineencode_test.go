package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// fuzzMetric builds a MetricResult from fuzz inputs, every optional field
// set or not by a bit of opt.
func fuzzMetric(opt uint16, s string, f float64, details []byte) MetricResult {
	m := MetricResult{Metric: "m" + s, Kind: "geval", Status: StatusPassed, Gated: opt&1 != 0,
		Threshold: f, LatencyMS: math.Abs(f) * 3, Usage: JudgeUsage{Requests: 1, Calls: int(opt), Attempts: 2,
			InputTokens: 700, OutputTokens: -3, USD: f / 7}}
	if opt&2 != 0 {
		m.Score = &f
	}
	if opt&4 != 0 {
		m.Reason = s
	}
	if opt&8 != 0 {
		m.ScoreMode = "weighted"
	}
	if opt&16 != 0 {
		m.ErrorClass, m.VerdictNote = "judge", s+"<"
	}
	if opt&32 != 0 {
		m.Error = &abi.Error{Code: abi.CodeJudge, Message: s, Plugin: "p", Digest: "sha256:00", Field: s, Stderr: "\n" + s, Retryable: opt&64 != 0}
	}
	if opt&128 != 0 {
		m.Details = details
	}
	if opt&256 != 0 {
		m.Usage.UsageUnknown = 1
	}
	if opt&512 != 0 {
		m.Aggregate = "mean"
	}
	return m
}

// FuzzAppendResultLine holds appendResultLine to json.Marshal, byte for
// byte, whenever it takes a line; json.Marshal must then succeed.
func FuzzAppendResultLine(f *testing.F) {
	f.Add(uint16(0xffff), "a <b> & \"c\"\n\t\x01 \u2028 é \xff", 0.5, []byte(`{"steps":["x"],"n":1}`))
	f.Add(uint16(0), "", 0.0, []byte(nil))
	f.Add(uint16(0x80), "x", math.Copysign(0, -1), []byte(`{"a" :1}`))
	f.Add(uint16(0x82), "x", 1e-7, []byte(`[1,2.5e3,"\u00e9",true,null,{}]`))
	f.Add(uint16(0x80), "x", 1e21, []byte(`{"a":"\u2028"}`))
	f.Add(uint16(0x80), "x", 2.0, []byte(`{"a":1`))
	f.Add(uint16(0x80), "x", math.NaN(), []byte(`"\xff"`))
	f.Fuzz(func(t *testing.T, opt uint16, s string, v float64, details []byte) {
		r := &CaseResult{CaseID: s, ConfigHash: "h" + s, Metrics: []MetricResult{fuzzMetric(opt, s, v, details), fuzzMetric(^opt, s, -v, details)}}
		if opt&2048 != 0 {
			r.Identity, r.CaseDigest, r.Worker = "i"+s, "d"+s, "w"+s
		}
		if opt&1024 != 0 {
			r.Metrics = nil
		}
		got, ok := appendResultLine([]byte("prefix"), r)
		if !ok {
			return
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("appendResultLine took a line json.Marshal refuses (%v): %s", err, got)
		}
		if string(got) != "prefix"+string(want) {
			t.Fatalf("appendResultLine:\n%s\njson.Marshal:\n%s", got[len("prefix"):], want)
		}
	})
}

// TestResultLineFastPath: the lines a G-Eval run writes — a score, a
// reason, a score mode, details from the kind, an error — take the hand
// encoder, so the fuzz targets above test the path that runs.
func TestResultLineFastPath(t *testing.T) {
	score := 0.7
	r := &CaseResult{CaseID: "case-1", ConfigHash: "abc", Metrics: []MetricResult{
		{Metric: "correctness", Kind: "geval", Status: StatusPassed, Score: &score, Threshold: 0.5, Reason: "fine",
			ScoreMode: "weighted", Details: json.RawMessage(`{"raw_score":7,"weighted_score":7.02}`), LatencyMS: 21.5},
		{Metric: "m2", Kind: "exact_match", Status: StatusError, ErrorClass: "plugin", Error: &abi.Error{Code: abi.CodeTrap, Message: "boom"}},
	}}
	got, ok := appendResultLine(nil, r)
	if !ok {
		t.Fatal("a G-Eval line was left to encoding/json")
	}
	want, _ := json.Marshal(r)
	if string(got) != string(want) {
		t.Fatalf("appendResultLine:\n%s\njson.Marshal:\n%s", got, want)
	}
	for _, details := range []string{`{"a": 1}`, `{"a":"<"}`, `{"a":1`, ` 1`} {
		r.Metrics[0].Details = json.RawMessage(details)
		if _, ok := appendResultLine(nil, r); ok {
			t.Errorf("details %q (not as json.Marshal writes them) were copied as they are", details)
		}
	}
}

// TestLineEncoderKnowsEveryField fails when a field is added to a type the
// line encoder writes (abijson checks abi.Error and abi.TestCase), until they write it too (then update the list).
func TestLineEncoderKnowsEveryField(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{CaseResult{}, "case_id config_hash identity,omitempty case_digest,omitempty worker,omitempty metrics case,omitempty"},
		{MetricResult{}, "metric kind status gated score,omitempty threshold reason,omitempty score_mode,omitempty " +
			"error_class,omitempty verdict_note,omitempty error,omitempty details,omitempty usage latency_ms fuel,omitempty " +
			"spread,omitempty panel,omitempty aggregate,omitempty dag_spread,omitempty -"},
		{JudgeUsage{}, "requests calls http_attempts cache_hits replayed,omitempty input_tokens output_tokens usd usage_unknown,omitempty"},
	} {
		typ := reflect.TypeOf(tc.v)
		var tags []string
		for i := range typ.NumField() {
			tag, ok := typ.Field(i).Tag.Lookup("json")
			if !ok {
				tag = "-"
			}
			tags = append(tags, tag)
		}
		if got := strings.Join(tags, " "); got != tc.want {
			t.Errorf("%s's fields changed: lineencode.go must write them as json.Marshal does.\ngot  %s\nwant %s", typ, got, tc.want)
		}
	}
}

// FuzzCaseFileName holds caseFileName's plain-name shortcut to the
// regular expression it skips.
func FuzzCaseFileName(f *testing.F) {
	for _, id := range []string{"case-000001", "", ".hidden", "a/b", "é", strings.Repeat("x", 121), "a.b_c-D9"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		safe := unsafeName.ReplaceAllString(id, "_")
		if safe != id || safe == "" || safe[0] == '.' {
			safe = fmt.Sprintf("%s-%08x", safe, fnv32(id))
		}
		if len(safe) > 120 {
			safe = fmt.Sprintf("%s-%08x", safe[:100], fnv32(id))
		}
		if got := caseFileName(id); got != safe+".json" {
			t.Fatalf("caseFileName(%q) = %q, want %q", id, got, safe+".json")
		}
	})
}

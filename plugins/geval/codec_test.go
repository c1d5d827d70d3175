package geval

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

func sameReply(t *testing.T, b []byte) {
	t.Helper()
	got, gerr := decodeReply(b)
	var want reply
	werr := json.Unmarshal(b, &want)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%q: error %v, encoding/json %v", b, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %+v (score %v), encoding/json %+v (score %v)", b, got, got.Score, want, want.Score)
	}
	if q, ok := quickReply(b); ok && !reflect.DeepEqual(q, want) {
		t.Fatalf("%q: fast path %+v, encoding/json %+v", b, q, want)
	}
}

var replySeeds = []string{
	`{"reason":"Correct and concise.","score":9}`,
	` { "reason" : "a \"quoted\" \\ \/ \b\f\n\r\t word" , "score" : -0 } `,
	`{"score":10,"reason":"x"}`,
	`{"score":10}`, `{"reason":"only"}`, `{}`, `{"score":null}`, `{"reason":null,"score":1}`,
	`{"score":1.0}`, `{"score":1e2}`, `{"score":01}`, `{"score":99999999999999999999}`, `{"score":123456789012345678}`,
	`{"Score":3}`, `{"REASON":"r","score":3}`, `{"score":1,"score":2}`, `{"reason":"a","reason":"b","score":1}`,
	`{"reason":"\u00e9t\u00e9","score":2}`, "{\"reason\":\"\xff\",\"score\":2}", "{\"reason\":\"caf\xc3\xa9\",\"score\":2}",
	"{\"reason\":\"a\tb\",\"score\":2}", `{"reason":"x","score":2,"extra":true}`, `{"reason":"x","score":2}x`,
	`{"reason":"x","score":2`, `{"reason":"x" "score":2}`, `{"reason":"x",}`, `[1]`, ``, `null`, `{"score":"7"}`,
	`{"score":-}`, `{"score":7]`, `{"reason":"\x"}`,
}

func TestDecodeReply(t *testing.T) {
	for _, s := range replySeeds {
		sameReply(t, []byte(s))
	}
}

// FuzzDecodeReply: decodeReply is json.Unmarshal into a reply, values and
// error messages alike.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range replySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameReply(t, b) })
}

func sameDetails(t *testing.T, d *Details) {
	t.Helper()
	got, gerr := marshalDetails(d)
	want, werr := json.Marshal(d)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%+v: error %v, encoding/json %v", d, gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestMarshalDetails(t *testing.T) {
	sameDetails(t, &Details{})
	sameDetails(t, &Details{Steps: []string{}, Warnings: []string{}, Candidates: []abi.ScoreCandidate{}, RubricBand: &RubricBand{}, StepsUsage: &Usage{}})
	sameDetails(t, &Details{Steps: []string{"a <b> & \"c\"\n\u2028\u2029\x00\x1f\x7f\xff é"}, StepsSource: "provided", RawScore: -3,
		WeightedScore: 1e-7, ScoreMode: "weighted", ScoreCause: "c", Candidates: []abi.ScoreCandidate{{Value: 1, Probability: 1e21}, {Value: 2, Probability: 0.5}},
		Spread: 123456789.125, ScoreRange: [2]int{0, 10}, RubricBand: &RubricBand{ScoreRange: []int{1, 2}, ExpectedOutcome: "o"}, StrictMode: true,
		PromptVersion: PromptVersion, Usage: &Usage{Model: "m", InputTokens: 1, OutputTokens: 2, USD: 0.001, CacheHit: true}, StepsUsage: &Usage{USD: -0.0}, Warnings: []string{"w"}})
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		sameDetails(t, &Details{WeightedScore: f})
		sameDetails(t, &Details{Spread: f})
		sameDetails(t, &Details{Candidates: []abi.ScoreCandidate{{Probability: f}}})
		sameDetails(t, &Details{Usage: &Usage{USD: f}})
		sameDetails(t, &Details{StepsUsage: &Usage{USD: f}})
	}
}

// FuzzAppendDetails: marshalDetails is json.Marshal of Details, byte for
// byte (or the same error).
func FuzzAppendDetails(f *testing.F) {
	f.Add("step", "provided", "weighted", "cause", "model", "outcome", "warning", 3, 7, 8.6, 0.4, 0.0, 0.001, uint8(0xff))
	f.Add("<&>\u2028", "", "", "", "", "", "", -1, 0, 1e-7, 1e21, -2.5e-300, math.MaxFloat64, uint8(0))
	f.Fuzz(func(t *testing.T, step, source, mode, cause, model, outcome, warning string, raw, lo int, weighted, prob, spread, usd float64, which uint8) {
		d := &Details{Steps: []string{step, source}, StepsSource: source, RawScore: raw, WeightedScore: weighted,
			ScoreMode: mode, ScoreCause: cause, Spread: spread, ScoreRange: [2]int{lo, raw}, StrictMode: which&1 != 0,
			PromptVersion: model, Usage: &Usage{Model: model, InputTokens: raw, OutputTokens: lo, USD: usd, CacheHit: which&2 != 0}}
		if which&4 != 0 {
			d.Candidates = []abi.ScoreCandidate{{Value: raw, Probability: prob}, {Value: lo, Probability: weighted}}
		}
		if which&8 != 0 {
			d.RubricBand = &RubricBand{ScoreRange: []int{lo, raw}, ExpectedOutcome: outcome}
		}
		if which&16 != 0 {
			d.StepsUsage = &Usage{Model: cause, USD: prob}
		}
		if which&32 != 0 {
			d.Warnings = []string{warning, outcome}
		}
		if which&64 != 0 {
			d.Usage = nil
			d.Steps = nil
		}
		sameDetails(t, d)
	})
}

package plugin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
)

// TestConformanceTextcheck runs a plugin written only against package sdk
// in-process and as a sandboxed Wasm module and requires identical results:
// the transport must be invisible to a kind.
func TestConformanceTextcheck(t *testing.T) {
	ctx := context.Background()
	transports := map[string]Plugin{
		TransportInproc: Inproc(textcheck.Plugin(), Options{}),
		TransportWasm:   load(t, "textcheck", Options{}),
	}
	if got, want := transports[TransportWasm].Info().Descriptor, transports[TransportInproc].Info().Descriptor; !jsonEqual(t, got, want) {
		t.Fatalf("descriptors differ:\nwasm   %s\ninproc %s", mustJSON(t, got), mustJSON(t, want))
	}

	tc := func(actual, expected string) abi.TestCase {
		return abi.TestCase{ID: "c", Input: "q", ActualOutput: actual, ExpectedOutput: expected}
	}
	type want struct {
		score   float64 // metric kinds
		success bool
		verdict string // node kinds
		code    abi.Code
		field   string
	}
	metrics := []struct {
		name, kind, config string
		threshold          float64
		c                  abi.TestCase
		want               want
	}{
		{"equal", "exact_match", ``, 0, tc("Paris", "Paris"), want{score: 1, success: true}},
		{"differ", "exact_match", ``, 0, tc("Paris", "paris"), want{score: 0}},
		{"ignore case", "exact_match", `{"ignore_case":true}`, 0, tc("PARIS", "paris"), want{score: 1, success: true}},
		{"ignore case unicode", "exact_match", `{"ignore_case":true}`, 0, tc("ÉTÉ", "été"), want{score: 1, success: true}},
		{"trim", "exact_match", `{"trim":true}`, 0, tc("  Paris\n", "Paris"), want{score: 1, success: true}},
		{"no trim", "exact_match", `{}`, 0, tc("  Paris\n", "Paris"), want{score: 0}},
		{"threshold kept", "exact_match", ``, 0.5, tc("a", "a"), want{score: 1, success: true}},
		{"multibyte difference", "exact_match", ``, 0, tc("naïve café", "naïve cafe"), want{score: 0}},
		{"missing expected", "exact_match", ``, 0, tc("Paris", ""), want{code: abi.CodeMissingField, field: "expected_output"}},
		{"unknown config field", "exact_match", `{"ignorecase":true}`, 0, tc("a", "a"), want{code: abi.CodeInvalidConfig}},
		{"wrong config type", "exact_match", `{"trim":"yes"}`, 0, tc("a", "a"), want{code: abi.CodeInvalidConfig, field: "trim"}},
		{"json valid", "json_valid", ``, 0, tc(`{"a":1}`, ""), want{score: 1, success: true}},
		{"json scalar", "json_valid", ``, 0, tc(`42`, ""), want{score: 1, success: true}},
		{"json invalid", "json_valid", ``, 0, tc(`{"a":1,}`, ""), want{score: 0}},
		{"json keys present", "json_valid", `{"required_keys":["a","b"]}`, 0, tc(`{"a":1,"b":null}`, ""), want{score: 1, success: true}},
		{"json keys missing", "json_valid", `{"required_keys":["a","z","y"]}`, 0, tc(`{"a":1}`, ""), want{score: 0}},
		{"json keys on array", "json_valid", `{"required_keys":["a"]}`, 0, tc(`[1]`, ""), want{score: 0}},
		{"json missing output", "json_valid", ``, 0, tc("", ""), want{code: abi.CodeMissingField, field: "actual_output"}},
		{"unknown kind", "nope", ``, 0, tc("a", "a"), want{code: abi.CodeABI}},
		{"node kind as metric", "regex_match", ``, 0, tc("a", "a"), want{code: abi.CodeABI}},
	}
	for _, m := range metrics {
		t.Run("measure/"+m.name, func(t *testing.T) {
			req := &abi.MeasureRequest{Kind: m.kind, Metric: "m", Config: rawOrNil(m.config), Threshold: m.threshold, Case: m.c}
			got := map[string]*abi.MeasureResult{}
			for name, p := range transports {
				res, err := p.Measure(ctx, nil, req)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got[name] = res
			}
			in, wa := got[TransportInproc], got[TransportWasm]
			if !jsonEqual(t, normalise(in.Error), normalise(wa.Error)) || !jsonEqual(t, stripErr(*in), stripErr(*wa)) {
				t.Fatalf("transports disagree:\ninproc %s\nwasm   %s", mustJSON(t, in), mustJSON(t, wa))
			}
			res := wa
			if m.want.code != "" {
				if res.Error == nil || res.Error.Code != m.want.code || res.Error.Field != m.want.field {
					t.Fatalf("want error %s (field %q), got %s", m.want.code, m.want.field, mustJSON(t, res))
				}
				if res.Error.Plugin != "textcheck@1.0.0" {
					t.Errorf("error names plugin %q", res.Error.Plugin)
				}
				return
			}
			if res.Error != nil || res.Score == nil || *res.Score != m.want.score || res.Success != m.want.success || res.Reason == "" {
				t.Fatalf("want score %v success %v, got %s", m.want.score, m.want.success, mustJSON(t, res))
			}
		})
	}

	nodes := []struct {
		name, kind, config string
		verdicts           []string
		c                  abi.TestCase
		want               want
	}{
		{"json true", "json_valid", ``, bin, tc(`{"ok":true}`, ""), want{verdict: "true"}},
		{"json false", "json_valid", ``, bin, tc(`{ok}`, ""), want{verdict: "false"}},
		{"json other field", "json_valid", `{"field":"input"}`, bin, abi.TestCase{ID: "c", Input: `[1,2]`, ActualOutput: "x"}, want{verdict: "true"}},
		{"json extra field", "json_valid", `{"field":"payload","required_keys":["id"]}`, bin,
			abi.TestCase{ID: "c", Extra: map[string]json.RawMessage{"payload": json.RawMessage(`"{\"id\":7}"`)}}, want{verdict: "true"}},
		{"json missing field", "json_valid", `{"field":"input"}`, bin, abi.TestCase{ID: "c", ActualOutput: "x"}, want{code: abi.CodeMissingField, field: "input"}},
		{"regex match", "regex_match", `{"pattern":"\\b\\d{4}\\b"}`, bin, tc("born in 1912.", ""), want{verdict: "true"}},
		{"regex no match", "regex_match", `{"pattern":"^Paris$"}`, bin, tc("Paris, France", ""), want{verdict: "false"}},
		{"regex case flag", "regex_match", `{"pattern":"(?i)^paris"}`, bin, tc("PARIS", ""), want{verdict: "true"}},
		{"regex field", "regex_match", `{"pattern":"\\?$","field":"input"}`, bin, abi.TestCase{ID: "c", Input: "why?", ActualOutput: "x"}, want{verdict: "true"}},
		{"regex invalid", "regex_match", `{"pattern":"(unclosed"}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "pattern"}},
		{"regex missing pattern", "regex_match", `{}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "pattern"}},
		{"contains all", "contains_all", `{"substrings":["red","blue"]}`, bin, tc("red and blue", ""), want{verdict: "true"}},
		{"contains some", "contains_all", `{"substrings":["red","green","blue"]}`, bin, tc("red and blue", ""), want{verdict: "false"}},
		{"contains ignore case", "contains_all", `{"substrings":["RED"],"ignore_case":true}`, bin, tc("Red", ""), want{verdict: "true"}},
		{"contains case sensitive", "contains_all", `{"substrings":["RED"]}`, bin, tc("Red", ""), want{verdict: "false"}},
		{"contains empty list", "contains_all", `{"substrings":[]}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "substrings"}},
		{"contains empty string", "contains_all", `{"substrings":["a",""]}`, bin, tc("x", ""), want{code: abi.CodeInvalidConfig, field: "substrings"}},
		{"no verdict set given", "contains_all", `{"substrings":["x"]}`, nil, tc("x", ""), want{verdict: "true"}},
		{"metric kind as node", "exact_match", ``, bin, tc("x", "x"), want{code: abi.CodeABI}},
	}
	for _, n := range nodes {
		t.Run("node/"+n.name, func(t *testing.T) {
			req := &abi.NodeRequest{Kind: n.kind, NodeID: "n1", Config: rawOrNil(n.config), Verdicts: n.verdicts, Case: n.c}
			got := map[string]*abi.NodeResult{}
			for name, p := range transports {
				res, err := p.Node(ctx, nil, req)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got[name] = res
			}
			in, wa := got[TransportInproc], got[TransportWasm]
			inCopy, waCopy := *in, *wa
			inCopy.Error, waCopy.Error = nil, nil
			if !jsonEqual(t, normalise(in.Error), normalise(wa.Error)) || !jsonEqual(t, inCopy, waCopy) {
				t.Fatalf("transports disagree:\ninproc %s\nwasm   %s", mustJSON(t, in), mustJSON(t, wa))
			}
			if n.want.code != "" {
				if wa.Error == nil || wa.Error.Code != n.want.code || wa.Error.Field != n.want.field {
					t.Fatalf("want error %s (field %q), got %s", n.want.code, n.want.field, mustJSON(t, wa))
				}
				return
			}
			if wa.Error != nil || wa.Verdict != n.want.verdict || wa.Reason == "" {
				t.Fatalf("want verdict %q, got %s", n.want.verdict, mustJSON(t, wa))
			}
		})
	}
}

var bin = []string{"false", "true"}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// normalise drops what legitimately differs between transports: the digest.
func normalise(e *abi.Error) *abi.Error {
	if e == nil {
		return nil
	}
	c := *e
	c.Digest = ""
	return &c
}

func stripErr(r abi.MeasureResult) abi.MeasureResult { r.Error = nil; return r }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	return mustJSON(t, a) == mustJSON(t, b)
}

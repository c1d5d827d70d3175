package assert_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/assert"
)

var ctx = context.Background()

func measure(kind, cfg string, threshold float64, c abi.TestCase) *abi.MeasureResult {
	return assert.Plugin().Measure(ctx, nil, &abi.MeasureRequest{Kind: kind, Metric: "m", Config: json.RawMessage(cfg),
		Threshold: threshold, Case: c})
}

func out(s string) abi.TestCase { return abi.TestCase{ID: "c1", ActualOutput: s} }

func outExp(s, e string) abi.TestCase {
	return abi.TestCase{ID: "c1", ActualOutput: s, ExpectedOutput: e}
}

// TestTextKinds: each kind's score on hand-picked cases, worked out from
// its definition (docs/metrics.md), with the reason it gives.
func TestTextKinds(t *testing.T) {
	const paris = "The capital of France is Paris."
	for _, tc := range []struct {
		name, kind, cfg string
		c               abi.TestCase
		score           float64
		reason          string
	}{
		{"contains", assert.KindContains, `{"value":"Paris"}`, out(paris), 1, `actual_output contains "Paris"`},
		{"contains case", assert.KindContains, `{"value":"paris"}`, out(paris), 0, `does not contain "paris"`},
		{"icontains", assert.KindIContains, `{"value":"PARIS"}`, out(paris), 1, `contains, ignoring case, "PARIS"`},
		{"icontains unicode", assert.KindIContains, `{"value":"ÉTÉ"}`, out("un été à Paris"), 1, ""},
		{"contains_all", assert.KindContainsAll, `{"values":["capital","Paris"]}`, out(paris), 1, "contains all 2 values"},
		{"contains_all missing", assert.KindContainsAll, `{"values":["capital","Lyon","Nice"]}`, out(paris), 0, `lacks 2 of 3 values: ["Lyon" "Nice"]`},
		{"contains_all ignore_case", assert.KindContainsAll, `{"values":["CAPITAL","paris"],"ignore_case":true}`, out(paris), 1, ""},
		{"contains_any", assert.KindContainsAny, `{"values":["Lyon","Paris"]}`, out(paris), 1, `contains 1 of 2 values: ["Paris"]`},
		{"contains_any none", assert.KindContainsAny, `{"values":["Lyon","Nice"]}`, out(paris), 0, "contains none of 2 values"},
		{"starts_with", assert.KindStartsWith, `{"value":"The capital"}`, out(paris), 1, ""},
		{"starts_with no", assert.KindStartsWith, `{"value":"Paris"}`, out(paris), 0, `starts with "The capital of Franc"…, not "Paris"`},
		{"starts_with ignore_case", assert.KindStartsWith, `{"value":"the CAPITAL","ignore_case":true}`, out(paris), 1, ""},
		{"equals value", assert.KindEquals, `{"value":"Paris"}`, out("Paris"), 1, "actual_output equals value"},
		{"equals expected", assert.KindEquals, `{}`, outExp("Paris", "Paris"), 1, "equals expected_output"},
		{"equals differs", assert.KindEquals, `{}`, outExp("Paris!", "Paris."), 0, `differs from expected_output at character 5: got "!", want "."`},
		{"equals trim", assert.KindEquals, `{"trim":true}`, outExp(" Paris\n", "Paris"), 1, ""},
		{"equals no trim", assert.KindEquals, `{}`, outExp(" Paris", "Paris"), 0, "at character 0"},
		{"equals ignore_case", assert.KindEquals, `{"ignore_case":true,"value":"PARIS"}`, out("paris"), 1, ""},
		{"regex", assert.KindRegex, `{"pattern":"\\bParis\\b"}`, out(paris), 1, `matches actual_output at byte 25: "Paris"`},
		{"regex no", assert.KindRegex, `{"pattern":"^Paris"}`, out(paris), 0, "does not match actual_output"},
		{"regex full_match", assert.KindRegex, `{"pattern":"The .* Paris\\.","full_match":true}`, out(paris), 1, "matches all of"},
		{"regex full_match partial", assert.KindRegex, `{"pattern":"Paris","full_match":true}`, out(paris), 0, "does not match all of"},
		// The anchors wrap the whole alternation, not its first branch.
		{"regex full_match alternation", assert.KindRegex, `{"pattern":"The|Paris\\.","full_match":true}`, out(paris), 0, ""},
		{"regex (?i)", assert.KindRegex, `{"pattern":"(?i)PARIS"}`, out(paris), 1, ""},
		{"is_json", assert.KindIsJSON, `{}`, out(`{"city":"Paris"}`), 1, "valid JSON"},
		{"is_json scalar", assert.KindIsJSON, `{}`, out(`42`), 1, ""},
		{"is_json not", assert.KindIsJSON, `{}`, out(`{"city":`), 0, "not valid JSON"},
		{"is_json keys", assert.KindIsJSON, `{"required_keys":["city","country"]}`, out(`{"city":"Paris"}`), 0, `without keys ["country"]`},
		// kitten → sitting: k→s, e→i, +g: d = 3 over max(6, 7) = 7.
		{"levenshtein", assert.KindLevenshtein, `{"value":"sitting"}`, out("kitten"), 4.0 / 7, "3 edit(s) from value over 7 characters"},
		{"levenshtein expected", assert.KindLevenshtein, `{}`, outExp("Paris", "Paris"), 1, "0 edit(s)"},
		// flaw → lawn: −f, +n: d = 2 over 4.
		{"levenshtein half", assert.KindLevenshtein, `{}`, outExp("flaw", "lawn"), 0.5, "similarity 0.5"},
		{"levenshtein unicode", assert.KindLevenshtein, `{"value":"café"}`, out("cafe"), 0.75, "1 edit(s)"},
		{"levenshtein ignore_case", assert.KindLevenshtein, `{"value":"PARIS","ignore_case":true}`, out("paris"), 1, ""},
		{"levenshtein strict", assert.KindLevenshtein, `{"value":"sitting","strict_mode":true}`, out("kitten"), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := measure(tc.kind, tc.cfg, 0.5, tc.c)
			if res.Error != nil || res.Score == nil {
				t.Fatalf("error %v", res.Error)
			}
			if *res.Score != tc.score || !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("score %v reason %q; want %v containing %q", *res.Score, res.Reason, tc.score, tc.reason)
			}
			if res.Success != (*res.Score >= res.Threshold) {
				t.Errorf("success %v for score %v threshold %v", res.Success, *res.Score, res.Threshold)
			}
		})
	}
}

// TestTextDetails: what a failing case records beyond its reason.
func TestTextDetails(t *testing.T) {
	for _, tc := range []struct {
		kind, cfg string
		c         abi.TestCase
		want      string
	}{
		{assert.KindContainsAll, `{"values":["a","zz","b"]}`, out("ab"), `{"kind":"contains_all","found":["a","b"],"missing":["zz"]}`},
		{assert.KindEquals, `{"value":"naïve"}`, out("naive"), `{"kind":"equals","first_difference":2}`},
		{assert.KindRegex, `{"pattern":"b+"}`, out("abbc"), `{"kind":"regex","match_start":1,"match_end":3}`},
		{assert.KindIsJSON, `{"required_keys":["b","a"]}`, out(`{}`), `{"kind":"is_json","missing_keys":["a","b"]}`},
		{assert.KindIsJSON, `{}`, out(`{"a" 1}`), `{"kind":"is_json","error":"invalid character '1' after object key","offset":6}`},
		{assert.KindLevenshtein, `{"value":"lawn"}`, out("flaw"), `{"kind":"levenshtein","distance":2,"length":4,"formula":"1 − d/max(len) = 1 − 2/4 = 0.5"}`},
	} {
		res := measure(tc.kind, tc.cfg, 0.5, tc.c)
		if res.Error != nil || string(res.Details) != tc.want {
			t.Errorf("%s %s: details %s, error %v; want %s", tc.kind, tc.cfg, res.Details, res.Error, tc.want)
		}
	}
}

// TestBadParams: params that cannot work are invalid_config naming the
// field — from Prepare, which the host runs when it checks a config,
// before any case.
func TestBadParams(t *testing.T) {
	for _, tc := range []struct {
		kind, cfg, field, msg string
	}{
		{assert.KindContains, `{}`, "value", "value is empty"},
		{assert.KindContains, `{"value":""}`, "value", "value is empty"},
		{assert.KindContains, `{"value":"x","values":["y"]}`, "values", "unknown field"},
		{assert.KindContainsAll, `{"values":[]}`, "values", "at least one"},
		{assert.KindContainsAny, `{"values":["a",""]}`, "values", "values [1] is empty"},
		{assert.KindStartsWith, `{"value":""}`, "value", "empty"},
		{assert.KindRegex, `{"pattern":"(a"}`, "pattern", "missing closing )"},
		{assert.KindRegex, `{"pattern":"(?<=a)b"}`, "pattern", "RE2"},
		{assert.KindRegex, `{"pattern":""}`, "pattern", "empty"},
		{assert.KindRegex, `{"pattern":"` + strings.Repeat("a", 5000) + `"}`, "pattern", "over the limit of 4096"},
		{assert.KindLevenshtein, `{"value":1}`, "value", "want string"},
		{assert.KindJSONCorrectness, `{}`, "schema", "schema is required"},
		{assert.KindJSONCorrectness, `{"schema":"x"}`, "schema", "not a JSON Schema"},
		{assert.KindJSONCorrectness, `{"schema":{"type":"nope"}}`, "schema", "does not compile"},
		{assert.KindJSONCorrectness, `{"schema":{"$ref":"file:///etc/passwd"}}`, "schema", "outside the schema"},
		{assert.KindJSONCorrectness, `{"schema":{"$ref":"https://example.com/s.json"}}`, "schema", "outside the schema"},
		{assert.KindJSONCorrectness, `{"schema":{"$ref":"other.json"}}`, "schema", "outside the schema"},
		{assert.KindToolCorrectness, `{"evaluation_params":["tool","arguments"]}`, "evaluation_params", `[1] is "arguments"`},
	} {
		res := assert.Plugin().Prepare(ctx, nil, &abi.PrepareRequest{Kind: tc.kind, Metric: "m", Config: json.RawMessage(tc.cfg)})
		e := res.Error
		if e == nil || e.Code != abi.CodeInvalidConfig || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s %.60s: error %+v; want invalid_config on %s containing %q", tc.kind, tc.cfg, e, tc.field, tc.msg)
		}
	}
}

// TestMissingFields: a case without a field a kind reads is skipped as
// missing_field, naming it; tool_correctness does not need tools_called.
func TestMissingFields(t *testing.T) {
	for _, tc := range []struct {
		kind, cfg, field string
	}{
		{assert.KindContains, `{"value":"x"}`, abi.FieldActualOutput},
		{assert.KindEquals, `{}`, abi.FieldExpectedOutput},
		{assert.KindLevenshtein, `{}`, abi.FieldExpectedOutput},
		{assert.KindToolCorrectness, `{}`, abi.FieldExpectedTools},
	} {
		c := abi.TestCase{ID: "c1", ActualOutput: "text"}
		if tc.field == abi.FieldActualOutput {
			c.ActualOutput = ""
		}
		res := measure(tc.kind, tc.cfg, 0.5, c)
		if res.Error == nil || res.Error.Code != abi.CodeMissingField || res.Error.Field != tc.field {
			t.Errorf("%s: error %+v; want missing_field %s", tc.kind, res.Error, tc.field)
		}
	}
}

// TestLevenshteinTooLong: past the bound the kind says so (a metric error
// naming the limit), it does not run into the call's deadline.
func TestLevenshteinTooLong(t *testing.T) {
	a, b := strings.Repeat("ab", 3000), strings.Repeat("ba", 3000)
	res := measure(assert.KindLevenshtein, `{}`, 0.5, outExp(a, b))
	if res.Error == nil || res.Error.Code != abi.CodeMetric || !strings.Contains(res.Error.Message, "the limit is 25000000") {
		t.Errorf("error %+v; want a metric error naming the limit", res.Error)
	}
}

// TestStrictThreshold: strict_mode forces the threshold to 1, as DeepEval.
func TestStrictThreshold(t *testing.T) {
	res := measure(assert.KindLevenshtein, `{"value":"Paris","strict_mode":true}`, 0.3, out("Paris"))
	if res.Threshold != 1 || *res.Score != 1 || !res.Success {
		t.Errorf("strict identical: %+v", res)
	}
	res = measure(assert.KindLevenshtein, `{"value":"Paris"}`, 0.3, out("Pari"))
	if res.Threshold != 0.3 || *res.Score != 0.8 || !res.Success {
		t.Errorf("not strict: %+v", res)
	}
}

// TestDescriptor: no kind asks for a capability, every kind has a Prepare
// (so the host checks its params before the run), and the descriptor's
// schemas are what the SDK publishes.
func TestDescriptor(t *testing.T) {
	d := assert.Plugin().Describe()
	if len(d.Capabilities) != 0 || len(d.Kinds) != 11 {
		t.Fatalf("capabilities %v, %d kinds", d.Capabilities, len(d.Kinds))
	}
	for _, k := range d.Kinds {
		if !k.Prepare || len(k.Capabilities) != 0 || k.Role != abi.RoleMetric {
			t.Errorf("%s: prepare %v, capabilities %v, role %s", k.Name, k.Prepare, k.Capabilities, k.Role)
		}
	}
}

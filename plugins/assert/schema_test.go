package assert_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/plugins/assert"
)

const citySchema = `{"schema":{"type":"object","required":["city","population"],"additionalProperties":false,
	"properties":{"city":{"type":"string","minLength":1},"population":{"type":"integer","minimum":0},
	"tags":{"type":"array","items":{"type":"string"}}}}}`

// TestJSONCorrectness: 1 when actual_output satisfies the schema, else 0
// with every violation located.
func TestJSONCorrectness(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, output string
		score             float64
		reason            string
	}{
		{"valid", citySchema, `{"city":"Paris","population":2102650}`, 1, "satisfies the schema"},
		{"valid tags", citySchema, `{"city":"Paris","population":2102650,"tags":["capital"]}`, 1, ""},
		{"missing key", citySchema, `{"city":"Paris"}`, 0, "at (root): missing property 'population'"},
		{"wrong types", citySchema, `{"city":"","population":-1,"tags":[1]}`, 0, "at /city: minLength"},
		{"extra key", citySchema, `{"city":"Paris","population":1,"mayor":"x"}`, 0, "additional properties 'mayor' not allowed"},
		{"not json", citySchema, `{"city":"Paris",}`, 0, "actual_output is not valid JSON: jsontext: invalid character '}'"},
		// A repeated member would leave the schema judging one of two values.
		{"repeated member", citySchema, `{"city":"Paris","population":1,"population":-5}`, 0, "duplicate object member name"},
		{"boolean schema", `{"schema":true}`, `[1,"x"]`, 1, ""},
		{"draft-07 by $schema", `{"schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"}]}}`, `[1]`, 0, "at /0"},
		{"local $ref", `{"schema":{"$defs":{"n":{"type":"number"}},"type":"array","items":{"$ref":"#/$defs/n"}}}`, `[1,"x"]`, 0, "at /1"},
		// RE2 in "pattern": linear whatever the input.
		{"pattern", `{"schema":{"type":"string","pattern":"^(a+)+$"}}`, `"` + strings.Repeat("a", 5000) + `b"`, 0, "does not match pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := measure(assert.KindJSONCorrectness, tc.cfg, 0.5, out(tc.output))
			if res.Error != nil || res.Score == nil {
				t.Fatalf("error %v", res.Error)
			}
			if *res.Score != tc.score || !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("score %v reason %q; want %v containing %q", *res.Score, res.Reason, tc.score, tc.reason)
			}
		})
	}
}

func TestJSONCorrectnessDetails(t *testing.T) {
	res := measure(assert.KindJSONCorrectness, citySchema, 0.5, out(`{"city":"","population":"many"}`))
	var d assert.SchemaDetails
	if err := json.Unmarshal(res.Details, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Errors) != 2 || d.Errors[0].InstanceLocation != "/city" || d.Errors[1].InstanceLocation != "/population" ||
		!strings.Contains(d.Errors[1].KeywordLocation, "/type") || d.Truncated {
		t.Errorf("details %s", res.Details)
	}
	many := `{"schema":{"type":"array","items":{"type":"string"}}}`
	res = measure(assert.KindJSONCorrectness, many, 0.5, out(`[`+strings.Repeat(`1,`, 30)+`1]`))
	if err := json.Unmarshal(res.Details, &d); err != nil || len(d.Errors) != 20 || !d.Truncated {
		t.Errorf("31 violations: %d listed, truncated %v", len(d.Errors), d.Truncated)
	}
	if !strings.Contains(res.Reason, "(and 17 more in details)") {
		t.Errorf("reason %q", res.Reason)
	}
}

// FuzzJSONCorrectness: whatever actual_output holds, json_correctness
// scores 0 or 1 and never errs; 1 only for text that is one JSON value
// satisfying the schema, which is_json then calls JSON too.
func FuzzJSONCorrectness(f *testing.F) {
	for _, s := range []string{`{"city":"Paris","population":1}`, `{"city":"Paris","population":1,"population":2}`, `[`, `"\ud800"`,
		"{\"city\":\"\xff\",\"population\":1}", `{"city":"P","population":1e400}`, `{"city":"P","population":1.0}`, ` {"city":"P","population":0} `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if text == "" {
			return // a case without actual_output is skipped, not measured
		}
		res := measure(assert.KindJSONCorrectness, citySchema, 0.5, out(text))
		if res.Error != nil || res.Score == nil || (*res.Score != 0 && *res.Score != 1) {
			t.Fatalf("%q: score %v error %+v", text, res.Score, res.Error)
		}
		if *res.Score == 1 {
			if !json.Valid([]byte(text)) || !strings.Contains(text, "city") {
				t.Fatalf("%q satisfies the schema but is not JSON with a city", text)
			}
		}
		isJSON := measure(assert.KindIsJSON, `{}`, 0.5, out(text))
		if *res.Score == 1 && *isJSON.Score != 1 {
			t.Fatalf("%q satisfies the schema but is_json says %v", text, *isJSON.Score)
		}
	})
}

// TestJSONCorrectnessDeterministic: the violations are listed in one
// order on every call, though the validator visits an object's
// properties in map order.
func TestJSONCorrectnessDeterministic(t *testing.T) {
	schema := `{"schema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"string"},"e":{"type":"string"}}}}`
	first := measure(assert.KindJSONCorrectness, schema, 0.5, out(`{"a":1,"b":2,"c":3,"d":4,"e":5}`))
	for range 50 {
		again := measure(assert.KindJSONCorrectness, schema, 0.5, out(`{"a":1,"b":2,"c":3,"d":4,"e":5}`))
		if again.Reason != first.Reason || string(again.Details) != string(first.Details) {
			t.Fatalf("two calls differ:\n%s\n%s", first.Details, again.Details)
		}
	}
	if !strings.HasPrefix(first.Reason, "actual_output does not satisfy the schema: at /a:") {
		t.Errorf("reason %q; want /a first", first.Reason)
	}
}

package judge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// builtInSchemas are the structured-output schemas the built-in metrics
// send (plugins/geval/prompt.go, plugins/dag/dag.go, plugins/rag/prompt.go),
// each with a reply its judge writes when all goes well.
var builtInSchemas = []struct{ name, schema, reply string }{
	{"geval score", `{"type":"object","properties":{"reason":{"type":"string"},"score":{"type":"integer","minimum":0,"maximum":10}},"required":["reason","score"],"additionalProperties":false}`,
		`{"reason":"covers it","score":7}`},
	{"geval score without reason", `{"type":"object","properties":{"score":{"type":"integer","minimum":1,"maximum":5}},"required":["score"],"additionalProperties":false}`,
		`{"score":5}`},
	{"geval steps", `{"type":"object","properties":{"steps":{"type":"array","items":{"type":"string"}}},"required":["steps"],"additionalProperties":false}`,
		`{"steps":["a","b"]}`},
	{"dag task", `{"type":"object","properties":{"output":{"type":"string"}},"required":["output"],"additionalProperties":false}`,
		`{"output":"x"}`},
	{"dag binary", `{"type":"object","properties":{"reason":{"type":"string"},"verdict":{"type":"boolean"}},"required":["reason","verdict"],"additionalProperties":false}`,
		`{"reason":"r","verdict":true}`},
	{"dag choice", `{"type":"object","properties":{"reason":{"type":"string"},"verdict":{"type":"string","enum":["a","b"]}},"required":["reason","verdict"],"additionalProperties":false}`,
		`{"reason":"r","verdict":"b"}`},
	{"rag verdicts", `{"type":"object","properties":{"verdicts":{"type":"array","items":{"type":"object","properties":{"verdict":{"type":"string","enum":["yes","no","idk"]},"reason":{"type":"string"}},"required":["verdict","reason"],"additionalProperties":false}}},"required":["verdicts"],"additionalProperties":false}`,
		`{"verdicts":[{"verdict":"yes","reason":"r"},{"reason":"s","verdict":"idk"}]}`},
	{"rag reason", `{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"],"additionalProperties":false}`,
		`{"reason":"r"}`},
}

// bothValidators compiles schema for jsonschema, as schemaSet does, and
// for simpleSchema.
func bothValidators(t testing.TB, schema string) (*jsonschema.Schema, *simpleSchema) {
	t.Helper()
	var set schemaSet
	cs, err := set.compile([]byte(schema))
	if err != nil {
		t.Fatalf("compile %s: %v", schema, err)
	}
	return cs.schema, cs.simple
}

func decodeInstance(t testing.TB, instance string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		t.Fatalf("instance %s: %v", instance, err)
	}
	return v
}

func TestBuiltInSchemasAreSimple(t *testing.T) {
	for _, b := range builtInSchemas {
		t.Run(b.name, func(t *testing.T) {
			full, simple := bothValidators(t, b.schema)
			if simple == nil {
				t.Fatal("no simple validator: every reply of this metric takes the general one")
			}
			v := decodeInstance(t, b.reply)
			if err := full.Validate(v); err != nil {
				t.Fatalf("the reply is not valid: %v", err)
			}
			if !simple.accepts(v) {
				t.Errorf("simple validator does not accept %s", b.reply)
			}
		})
	}
}

func TestSimpleSchema(t *testing.T) {
	score := builtInSchemas[0].schema
	cases := []struct {
		name, schema, instance string
		accepted               bool // by the simple validator
	}{
		{"in range", score, `{"reason":"r","score":10}`, true},
		{"negative zero", score, `{"reason":"r","score":-0}`, true},
		{"over maximum", score, `{"reason":"r","score":11}`, false},
		{"under minimum", score, `{"reason":"r","score":-1}`, false},
		{"integral fraction is jsonschema's", score, `{"reason":"r","score":7.0}`, false},
		{"exponent is jsonschema's", score, `{"reason":"r","score":7e0}`, false},
		{"fraction", score, `{"reason":"r","score":7.5}`, false},
		{"huge", score, `{"reason":"r","score":123456789012345678901234567890}`, false},
		{"string score", score, `{"reason":"r","score":"7"}`, false},
		{"missing required", score, `{"score":7}`, false},
		{"extra member", score, `{"reason":"r","score":7,"x":1}`, false},
		{"null reason", score, `{"reason":null,"score":7}`, false},
		{"not an object", score, `["reason"]`, false},
		{"enum miss", builtInSchemas[5].schema, `{"reason":"r","verdict":"c"}`, false},
		{"open object", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x","b":[1,{}]}`, true},
		{"extra members typed", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"a":1,"b":2}`, true},
		{"extra member mistyped", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"a":1,"b":"2"}`, false},
		{"type list", `{"type":["string","null"]}`, `null`, true},
		{"number fraction", `{"type":"number"}`, `0.25`, true},
		{"number bounded fraction", `{"type":"number","maximum":1}`, `0.25`, false},
		{"true schema", `true`, `{"anything":[1,2]}`, true},
		{"properties ignore strings", `{"properties":{"a":{"type":"string"}}}`, `"text"`, true},
		{"annotations", `{"type":"string","description":"d","title":"t","default":"x","examples":["y"],"$comment":"c"}`, `"s"`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			full, simple := bothValidators(t, c.schema)
			if simple == nil {
				t.Fatalf("schema %s has no simple validator", c.schema)
			}
			v := decodeInstance(t, c.instance)
			got := simple.accepts(v)
			if got != c.accepted {
				t.Errorf("accepts(%s) = %v, want %v", c.instance, got, c.accepted)
			}
			if got {
				if err := full.Validate(v); err != nil {
					t.Errorf("accepted what jsonschema refuses: %v", err)
				}
			}
		})
	}
}

func TestSchemasOutsideTheSubsetHaveNoSimpleValidator(t *testing.T) {
	for _, schema := range []string{
		`false`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"type":"string"}}}`,
		`{"type":"string","pattern":"^a"}`,
		`{"type":"string","minLength":1}`,
		`{"type":"string","format":"email"}`,
		`{"const":"a"}`,
		`{"enum":[1,2]}`,
		`{"enum":["a",null]}`,
		`{"type":["string","integer"],"enum":["a"]}`,
		`{"type":"integer","minimum":0.5}`,
		`{"type":"integer","maximum":1e3}`,
		`{"type":"integer","exclusiveMinimum":0}`,
		`{"items":[{"type":"string"}]}`,
		`{"type":"array","prefixItems":[{"type":"string"}]}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}`,
		`{"allOf":[{"type":"string"}]}`,
		`{"type":"thing"}`,
		`{"type":["string","string"]}`,
		`{"type":[]}`,
	} {
		// compileSimple alone: some of these are not even schemas, which
		// the compiler refuses before compileSimple would see them.
		if simple := compileSimple(decodeInstance(t, schema)); simple != nil {
			t.Errorf("%s: a simple validator, want none (jsonschema alone decides)", schema)
		}
	}
}

// TestSimpleSchemaNeverAcceptsWhatJSONSchemaRefuses generates schemas in
// the subset and values near them (a seeded generator, so a failure
// repeats) and holds the simple validator to jsonschema.
func TestSimpleSchemaNeverAcceptsWhatJSONSchemaRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2026))
	accepted, valid := 0, 0
	const n = 3000
	for i := range n {
		schema := genSchema(rng, 0)
		full, simple := bothValidators(t, schema)
		if simple == nil {
			t.Fatalf("generated schema %s has no simple validator", schema)
		}
		for range 4 {
			instance := genValue(rng, 0)
			v := decodeInstance(t, instance)
			err := full.Validate(v)
			if err == nil {
				valid++
			}
			if simple.accepts(v) {
				accepted++
				if err != nil {
					t.Fatalf("case %d: schema %s accepts %s, which jsonschema refuses: %v", i, schema, instance, err)
				}
			}
		}
	}
	t.Logf("%d of %d valid instances taken by the simple validator", accepted, valid)
	if accepted < valid/2 {
		t.Errorf("the simple validator took %d of %d valid instances; want most", accepted, valid)
	}
}

var genKeys = []string{"a", "b", "score", "reason"}

func genSchema(rng *rand.Rand, depth int) string {
	if depth > 2 || rng.IntN(6) == 0 {
		leaves := []string{`true`, `{"type":"string"}`, `{"type":"integer"}`, `{"type":"number"}`, `{"type":"boolean"}`,
			`{"type":"null"}`, `{}`, `{"type":["string","null"]}`, `{"enum":["x","y"]}`, `{"type":"string","enum":["a","b"]}`}
		if rng.IntN(3) == 0 {
			lo := rng.IntN(5) - 2
			return fmt.Sprintf(`{"type":%q,"minimum":%d,"maximum":%d}`, []string{"integer", "number"}[rng.IntN(2)], lo, lo+rng.IntN(4))
		}
		return leaves[rng.IntN(len(leaves))]
	}
	if rng.IntN(3) == 0 {
		return `{"type":"array","items":` + genSchema(rng, depth+1) + `}`
	}
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	var names []string
	for i, k := range genKeys[:1+rng.IntN(len(genKeys))] {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", k, genSchema(rng, depth+1))
		names = append(names, k)
	}
	b.WriteString(`}`)
	if r := rng.IntN(3); r > 0 {
		fmt.Fprintf(&b, `,"required":[%q]`, names[rng.IntN(len(names))])
	}
	switch rng.IntN(3) {
	case 0:
		b.WriteString(`,"additionalProperties":false`)
	case 1:
		b.WriteString(`,"additionalProperties":` + genSchema(rng, depth+1))
	}
	b.WriteString(`}`)
	return b.String()
}

func genValue(rng *rand.Rand, depth int) string {
	leaves := []string{`"x"`, `"a"`, `"y"`, `""`, `0`, `-0`, `1`, `-2`, `3`, `5`, `1.5`, `2.0`, `1e1`, `-1e-1`,
		`99999999999999999999`, `true`, `false`, `null`}
	if depth > 3 || rng.IntN(3) == 0 {
		return leaves[rng.IntN(len(leaves))]
	}
	if rng.IntN(3) == 0 {
		var parts []string
		for range rng.IntN(3) {
			parts = append(parts, genValue(rng, depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	var parts []string
	for _, k := range append(genKeys, "zz") {
		if rng.IntN(2) == 0 {
			parts = append(parts, fmt.Sprintf("%q:%s", k, genValue(rng, depth+1)))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// FuzzSimpleSchemaNeverAcceptsWhatJSONSchemaRefuses: for any schema the
// simple validator reads and any value, accepting means jsonschema
// accepts too.
func FuzzSimpleSchemaNeverAcceptsWhatJSONSchemaRefuses(f *testing.F) {
	for _, b := range builtInSchemas {
		f.Add(b.schema, b.reply)
	}
	f.Add(`{"type":"integer","minimum":-3,"maximum":3}`, `3`)
	f.Add(`{"type":"object","additionalProperties":{"type":"number"}}`, `{"a":1e400}`)
	f.Fuzz(func(t *testing.T, schema, instance string) {
		var set schemaSet
		cs, err := set.compile([]byte(schema))
		if err != nil || cs.simple == nil {
			return
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(instance)))
		if err != nil {
			return
		}
		if cs.simple.accepts(v) {
			if err := cs.schema.Validate(v); err != nil {
				t.Fatalf("schema %s accepts %s, which jsonschema refuses: %v", schema, instance, err)
			}
		}
	})
}

func BenchmarkStructuredObjectGEvalScore(b *testing.B) {
	var set schemaSet
	cs, err := set.compile([]byte(builtInSchemas[0].schema))
	if err != nil {
		b.Fatal(err)
	}
	reply := `{"reason":"The answer covers the question and cites the refund window correctly.","score":7}`
	b.ReportAllocs()
	for b.Loop() {
		if _, problem := structuredObject(cs, reply); problem != nil {
			b.Fatal(problem)
		}
	}
}

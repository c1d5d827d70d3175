package dag

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// briefExample is the configuration format as documented, with the
// escalate node it refers to.
const briefExample = `
aggregate: min
reason: path
nodes:
  - id: gate
    kind: json_valid
    config: {}
    verdicts:
      "false": {score: 0}
      "true": {then: has_answer}
  - id: extract
    kind: task
    instructions: "Extract every claim the answer makes."
    output_label: "Claims"
    params: [actual_output]
    children: [has_answer, tone]
  - id: has_answer
    kind: binary
    criteria: "Does the answer address the question?"
    params: [input]
    verdicts:
      true: {metric: helpfulness}
      false: {score: 2}
  - id: tone
    kind: choice
    criteria: "What is the tone?"
    params: [actual_output]
    verdicts:
      formal: {score: 10}
      casual: {score: 6.5}
      rude: {then: escalate}
  - id: escalate
    kind: regex_match
    config: {pattern: "(?i)idiot", fields: [actual_output], max: 0x10, ratio: 1.5, on: yes, nothing: ~}
    verdicts:
      "true": {score: 0}
      "false": {score: 3}
`

func TestParseExample(t *testing.T) {
	spec, err := ParseYAML([]byte(briefExample), "anvil.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Aggregate != "min" || spec.Reason != "path" || len(spec.Nodes) != 5 || spec.File != "anvil.yaml" {
		t.Fatalf("spec = %+v", spec)
	}
	ha := spec.Nodes[2]
	if ha.ID != "has_answer" || ha.Line != 17 || joined(ha.Params) != "input" {
		t.Errorf("has_answer = %+v", ha)
	}
	// YAML boolean keys become "true"/"false", in configuration order.
	if got := joined(ha.Verdicts.Keys()); got != "true,false" {
		t.Errorf("has_answer verdicts = %s", got)
	}
	if v, _ := ha.Verdicts.Get("true"); v.Metric != "helpfulness" {
		t.Errorf("true outcome = %+v", v)
	}
	if v, _ := spec.Nodes[3].Verdicts.Get("casual"); v.Score == nil || *v.Score != 6.5 {
		t.Errorf("casual outcome = %+v", v)
	}
	if got := string(spec.Nodes[0].Config); got != `{}` {
		t.Errorf("gate config = %s", got)
	}
	// Config goes to JSON verbatim, keys in order, YAML scalars resolved.
	want := `{"pattern":"(?i)idiot","fields":["actual_output"],"max":16,"ratio":1.5,"on":"yes","nothing":null}`
	if got := string(spec.Nodes[4].Config); got != want {
		t.Errorf("escalate config = %s\nwant %s", got, want)
	}
	if _, _, err := Validate(spec, testEnv()); err == nil {
		t.Error("roots gate and extract: a code gate among several roots must be rejected")
	}
	// Fixed: the gate is the single root and leads to the extraction.
	spec.Nodes[0].Verdicts[1].Then = "extract"
	if _, _, err := Validate(spec, testEnv()); err != nil {
		t.Errorf("validate: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown top-level key", "nodes: []\nagregate: min\n", []string{`f.yaml:2: unknown key "agregate" (want aggregate, reason, roots, nodes)`}},
		{"unknown node key", "nodes:\n  - id: a\n    kind: task\n    instruction: x\n",
			[]string{`f.yaml:4: node "a": unknown key "instruction"`}},
		{"unknown outcome key", "nodes:\n  - id: b\n    kind: binary\n    verdicts:\n      \"true\": {scor: 1}\n",
			[]string{`f.yaml:5: node "b": verdict "true": unknown key "scor" (want score, then or metric)`}},
		{"duplicate verdict YAML bool and string", "nodes:\n  - id: b\n    kind: binary\n    verdicts:\n      true: {score: 1}\n      \"true\": {score: 2}\n",
			[]string{`f.yaml:6: node "b": duplicate key "true" (first at line 5)`}},
		{"duplicate top-level key", "nodes: []\nnodes: []\n", []string{`f.yaml:2: duplicate key "nodes" (first at line 1)`}},
		{"score as string", "nodes:\n  - id: b\n    kind: binary\n    verdicts: {\"true\": {score: \"7\"}}\n",
			[]string{`f.yaml:4: node "b": verdict "true": score must be a number from 0 to 10, got the string "7"`}},
		{"score as bool", "nodes:\n  - id: b\n    kind: binary\n    verdicts: {\"true\": {score: true}}\n",
			[]string{`node "b": verdict "true": score must be a number from 0 to 10, got a boolean`}},
		{"params not a list", "nodes:\n  - id: t\n    kind: task\n    params: input\n",
			[]string{`f.yaml:4: node "t": params: want a list of strings, got the string "input"`}},
		{"children item not a string", "nodes:\n  - id: t\n    kind: task\n    children: [{a: 1}]\n",
			[]string{`node "t": children[0]: want a string, got a mapping`}},
		{"config not a mapping", "nodes:\n  - id: g\n    kind: json_valid\n    config: [1]\n",
			[]string{`f.yaml:4: node "g": config: want a mapping, got a list`}},
		{"config duplicate key", "nodes:\n  - id: g\n    kind: json_valid\n    config: {a: 1, a: 2}\n",
			[]string{`node "g": duplicate key "a"`}},
		{"config infinity", "nodes:\n  - id: g\n    kind: json_valid\n    config: {a: .inf}\n",
			[]string{`node "g": config: number ".inf" has no JSON form`}},
		{"verdict outcome scalar", "nodes:\n  - id: b\n    kind: binary\n    verdicts: {\"true\": 7}\n",
			[]string{`node "b": verdict "true": want a mapping with one of score, then, metric; got a number`}},
		{"verdicts a list", "nodes:\n  - id: b\n    kind: binary\n    verdicts: [a]\n",
			[]string{`node "b": verdicts: want a mapping of verdict to outcome, got a list`}},
		{"node not a mapping", "nodes: [a]\n", []string{`f.yaml:1: nodes[0]: want a mapping, got the string "a"`}},
		{"nodes not a list", "nodes: {a: 1}\n", []string{`nodes: want a list of nodes, got a mapping`}},
		{"missing id and kind", "nodes:\n  - instructions: x\n",
			[]string{`f.yaml:2: node "nodes[0]": missing id`, `f.yaml:2: node "nodes[0]": missing kind`}},
		{"missing nodes", "aggregate: min\n", []string{`no nodes: key "nodes" is required`}},
		{"not a mapping", "- a\n", []string{`dag configuration must be a mapping, got a list`}},
		{"empty", "", []string{"empty dag configuration"}},
		{"merge key", "base: &b {kind: task}\n", []string{`unknown key "base"`}},
		{"merge key in node", "nodes:\n  - <<: {kind: task}\n    id: a\n", []string{`node "a": merge keys (<<) are not supported`}},
		{"yaml syntax", "nodes: [\n", []string{"f.yaml: yaml: line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseYAML([]byte(tt.src), "f.yaml")
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v (%T), want *dag.Error", err, err)
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(de.Problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem contains %q; got:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseAliases(t *testing.T) {
	src := `
nodes:
  - id: b
    kind: binary
    criteria: &c "Is it right?"
    params: &p [input]
    verdicts:
      "true": &top {score: 10}
      "false": {score: 0}
  - id: c
    kind: binary
    criteria: *c
    params: *p
    verdicts: {"true": *top, "false": {score: 1}}
`
	spec, err := ParseYAML([]byte(src), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Nodes[1]
	if c.Criteria != "Is it right?" || joined(c.Params) != "input" {
		t.Errorf("c = %+v", c)
	}
	if v, _ := c.Verdicts.Get("true"); v.Score == nil || *v.Score != 10 {
		t.Errorf("aliased outcome = %+v", v)
	}
}

func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	src := "nodes:\n  - id: g\n    kind: json_valid\n    config:\n" + indent(b.String(), "      ")
	_, err := ParseYAML([]byte(src), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err = %v, want too large", err)
	}
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pre + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestParseNodeFromDocument(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("metrics:\n  q:\n    kind: dag\n    dag:\n      nodes:\n        - {id: x, kind: task, bogus: 1}\n"), &doc); err != nil {
		t.Fatal(err)
	}
	dagNode := doc.Content[0].Content[1].Content[1].Content[3]
	_, err := Parse(dagNode, "anvil.yaml")
	if err == nil || !strings.Contains(err.Error(), `anvil.yaml:6: node "x": unknown key "bogus"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestParseJSONMatchesYAML decodes the same configuration from YAML, from
// JSON through ParseJSON, through json.Unmarshal, and from the spec's own
// JSON encoding; all must agree.
func TestParseJSONMatchesYAML(t *testing.T) {
	fromYAML, err := ParseYAML([]byte(briefExample), "")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := json.MarshalIndent(fromYAML, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ParseJSON(enc, "")
	if err != nil {
		t.Fatalf("ParseJSON: %v\n%s", err, enc)
	}
	var viaUnmarshal struct {
		DAG Spec `json:"dag"`
	}
	if err := json.Unmarshal([]byte(`{"dag": `+string(enc)+`}`), &viaUnmarshal); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	for _, got := range []*Spec{fromJSON, &viaUnmarshal.DAG} {
		if !reflect.DeepEqual(stripLines(got), stripLines(fromYAML)) {
			t.Errorf("JSON spec differs:\n got %+v\nwant %+v", stripLines(got), stripLines(fromYAML))
		}
	}
	// Line numbers come from the JSON text.
	if fromJSON.Nodes[1].Line == 0 || fromJSON.Nodes[1].Line == fromJSON.Nodes[0].Line {
		t.Errorf("JSON node lines: %d, %d", fromJSON.Nodes[0].Line, fromJSON.Nodes[1].Line)
	}
}

func stripLines(s *Spec) *Spec {
	c := *s
	c.Line, c.File = 0, ""
	c.Nodes = slices.Clone(s.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].Line = 0
		c.Nodes[i].Verdicts = slices.Clone(c.Nodes[i].Verdicts)
		for j := range c.Nodes[i].Verdicts {
			c.Nodes[i].Verdicts[j].Line = 0
		}
	}
	return &c
}

func TestParseJSONErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown key with line", "{\n  \"nodes\": [\n    {\"id\": \"a\", \"kind\": \"task\", \"extra\": 1}\n  ]\n}", `c.json:3: node "a": unknown key "extra"`},
		{"duplicate key", `{"nodes": [], "nodes": []}`, `duplicate key "nodes"`},
		{"syntax", "{\n\"nodes\": [,]}", "c.json: line 2: json: invalid character ','"},
		{"truncated", `{"nodes": [`, "unexpected end of input"},
		{"trailing", `{"nodes": []} {}`, "unexpected data after the JSON value"},
		{"score string", `{"nodes": [{"id": "b", "kind": "binary", "verdicts": {"true": {"score": "7"}}}]}`, `node "b": verdict "true": score must be a number`},
		{"unicode escapes", `{"nodes": [{"id": "\ud83d\ude00\/", "kind": "binary", "bogus": 1}]}`, `node "😀/": unknown key "bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJSON([]byte(tt.src), "c.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestVerdictsMarshalOrder(t *testing.T) {
	ten := 10.0
	vs := Verdicts{{Key: "z", Score: &ten}, {Key: "a", Then: "n"}, {Key: "m", Metric: "helpfulness"}}
	b, err := json.Marshal(vs)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"z":{"score":10},"a":{"then":"n"},"m":{"metric":"helpfulness"}}` {
		t.Errorf("got %s", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(briefExample))
	f.Add([]byte(valid))
	f.Add([]byte(`{"nodes": [{"id": "a", "kind": "binary", "verdicts": {"true": {"score": 1}, "false": {"then": "a"}}}]}`))
	f.Add([]byte("nodes:\n  - &n {id: a, kind: task, children: [*n]}\n"))
	f.Add([]byte("roots: [a]\nnodes: [{id: a, kind: choice, verdicts: {x: {score: 1e400}}}]"))
	env := testEnv()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte, string) (*Spec, error){ParseYAML, ParseJSON} {
			spec, err := parse(data, "fuzz")
			if err != nil {
				var de *Error
				if !errors.As(err, &de) {
					t.Fatalf("error %T is not *dag.Error", err)
				}
				continue
			}
			g, _, err := Validate(spec, env)
			if err != nil {
				continue
			}
			_ = Render(g, nil)
			enc, err := json.Marshal(spec)
			if err != nil {
				continue // e.g. a score that is infinite: no JSON form
			}
			if _, err := ParseJSON(enc, "fuzz.json"); err != nil {
				t.Fatalf("re-parse of a valid spec's JSON: %v\n%s", err, enc)
			}
		}
	})
}

package dag

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// valid is a small correct graph the rows below break one way at a time.
const valid = `
nodes:
  - id: gate
    kind: json_valid
    verdicts:
      "false": {score: 0}
      "true": {then: extract}
  - id: extract
    kind: task
    instructions: Extract the claims.
    output_label: Claims
    params: [actual_output]
    children: [judge]
  - id: judge
    kind: binary
    criteria: Are the claims supported?
    verdicts:
      "true": {score: 10}
      "false": {metric: helpfulness}
`

func TestValidateAccepts(t *testing.T) {
	g := mustGraph(t, valid)
	if got := joined(nodeIDs(g.Roots)); got != "gate" {
		t.Errorf("roots = %s, want gate", got)
	}
	if g.Aggregate != AggregateMin || g.Reason != ReasonPath {
		t.Errorf("defaults: aggregate %q reason %q", g.Aggregate, g.Reason)
	}
	if got := joined(g.RequiredFields()); got != "actual_output" {
		t.Errorf("RequiredFields = %s", got)
	}
	if got := joined(g.ChildMetrics()); got != "helpfulness" {
		t.Errorf("ChildMetrics = %s", got)
	}
	judge := g.Node("judge")
	if judge.Class != ClassBinary || joined(judge.Verdicts) != "false,true" {
		t.Errorf("judge: class %s verdicts %v", judge.Class, judge.Verdicts)
	}
	if got := joined(nodeIDs(judge.DataParents)); got != "extract" {
		t.Errorf("judge data parents = %s", got)
	}
	if got := joined(nodeIDs(g.Node("extract").ControlParents)); got != "gate" {
		t.Errorf("extract control parents = %s", got)
	}
	if g.Node("gate").Class != ClassCode {
		t.Errorf("gate class = %s", g.Node("gate").Class)
	}
	if got := string(g.Node("extract").RequestConfig()); got != `{"instructions":"Extract the claims.","output_label":"Claims","params":["actual_output"]}` {
		t.Errorf("RequestConfig = %s", got)
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // substrings of one problem line each
	}{
		{"unknown then", strings.Replace(valid, "then: extract", "then: nowhere", 1),
			[]string{`test.yaml:7: node "gate": verdict "true": then: unknown node id "nowhere"`}},
		{"unknown child", strings.Replace(valid, "children: [judge]", "children: [judge, ghost]", 1),
			[]string{`node "extract": children: unknown node id "ghost"`}},
		{"unknown root", "roots: [gate, ghost]\n" + valid,
			[]string{`roots: unknown node id "ghost"`}},
		{"duplicate root", "roots: [gate, gate]\n" + valid,
			[]string{`roots: "gate" listed twice`}},
		{"duplicate id", valid + `
  - id: judge
    kind: binary
    criteria: again
    verdicts: {"true": {score: 1}, "false": {score: 0}}
`, []string{`test.yaml:21: node "judge": duplicate id (first defined at line 14)`}},
		{"cycle through then", `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [a]}
  - id: a
    kind: binary
    criteria: c
    verdicts: {"true": {then: b}, "false": {score: 0}}
  - id: b
    kind: binary
    criteria: c
    verdicts: {"true": {then: c}, "false": {score: 0}}
  - id: c
    kind: choice
    criteria: c
    verdicts: {x: {then: a}, y: {score: 1}}
`, []string{"cycle: a -> b -> c -> a"}},
		{"cycle through children and then", `
nodes:
  - id: r
    kind: binary
    criteria: c
    params: [input]
    verdicts: {"true": {then: t}, "false": {score: 0}}
  - {id: t, kind: task, instructions: x, params: [input], children: [b]}
  - id: b
    kind: binary
    criteria: c
    verdicts: {"true": {then: t}, "false": {score: 0}}
`, []string{"cycle: t -> b -> t"}},
		{"self loop", `
nodes:
  - id: a
    kind: binary
    criteria: c
    params: [input]
    verdicts: {"true": {then: a}, "false": {score: 0}}
`, []string{"cycle: a -> a"}},
		{"two cycles, each reported", `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [p, x]}
  - {id: x, kind: regex_match, verdicts: {"true": {then: y}, "false": {score: 0}}}
  - {id: y, kind: regex_match, verdicts: {"true": {then: x}, "false": {score: 0}}}
  - {id: p, kind: binary, criteria: c, verdicts: {"true": {then: q}, "false": {score: 0}}}
  - {id: q, kind: binary, criteria: c, params: [input], verdicts: {"true": {then: p}, "false": {score: 0}}}
`, []string{"cycle: x -> y -> x", "cycle: p -> q -> p"}},
		{"all nodes in a cycle", `
nodes:
  - {id: a, kind: regex_match, verdicts: {"true": {then: b}, "false": {score: 0}}}
  - {id: b, kind: regex_match, verdicts: {"true": {then: a}, "false": {score: 0}}}
`, []string{"cycle: a -> b -> a", "no root: every node has a parent"}},
		{"binary missing false", strings.Replace(valid, `"false": {metric: helpfulness}`, `"maybe": {score: 5}`, 1),
			[]string{`node "judge": binary node needs exactly one verdict for each of "false", "true": missing "false"`,
				`node "judge": binary node has verdicts "false", "true": unknown verdict "maybe"`}},
		{"binary duplicate true via YAML boolean", strings.Replace(valid, `"false": {metric: helpfulness}`, `true: {score: 5}`, 1),
			[]string{`node "judge": duplicate key "true"`}},
		{"choice without verdicts", `
nodes:
  - {id: tone, kind: choice, criteria: c, params: [input], verdicts: {}}
`, []string{`node "tone": choice node needs at least one verdict`}},
		{"choice duplicate after trimming", `
nodes:
  - id: tone
    kind: choice
    criteria: c
    params: [input]
    verdicts:
      formal: {score: 10}
      " formal ": {score: 5}
      Formal: {score: 4}
`, []string{`test.yaml:9: node "tone": duplicate verdict "formal" after trimming spaces (first at line 8)`}},
		{"choice empty verdict", `
nodes:
  - {id: tone, kind: choice, criteria: c, params: [input], verdicts: {" ": {score: 1}, a: {score: 2}}}
`, []string{`node "tone": empty verdict`}},
		{"code node verdicts differ from kind", strings.Replace(valid, `"false": {score: 0}`, `"yes": {score: 0}`, 1),
			[]string{`node "gate": kind "json_valid" needs exactly one verdict for each of "false", "true": missing "false"`,
				`node "gate": kind "json_valid" has verdicts "false", "true": unknown verdict "yes"`}},
		{"outcome empty", strings.Replace(valid, `"true": {score: 10}`, `"true": {}`, 1),
			[]string{`node "judge": verdict "true": an outcome is exactly one of score, then, metric (got 0)`}},
		{"outcome null", strings.Replace(valid, `"true": {score: 10}`, `"true":`, 1),
			[]string{`node "judge": verdict "true": an outcome is exactly one of score, then, metric (got 0)`}},
		{"outcome two", strings.Replace(valid, `"true": {score: 10}`, `"true": {score: 10, metric: fluency}`, 1),
			[]string{`node "judge": verdict "true": an outcome is exactly one of score, then, metric (got 2)`}},
		{"score above 10", strings.Replace(valid, `"true": {score: 10}`, `"true": {score: 11}`, 1),
			[]string{`node "judge": verdict "true": score 11 is outside 0–10`}},
		{"score negative", strings.Replace(valid, `"true": {score: 10}`, `"true": {score: -0.5}`, 1),
			[]string{`node "judge": verdict "true": score -0.5 is outside 0–10`}},
		{"score NaN", strings.Replace(valid, `"true": {score: 10}`, `"true": {score: .nan}`, 1),
			[]string{`node "judge": verdict "true": score NaN is outside 0–10`}},
		{"decision node among several roots", `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [b]}
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}
  - {id: g, kind: json_valid, verdicts: {"true": {score: 1}, "false": {score: 0}}}
`, []string{`node "g": only task nodes can be one of several roots (roots: t, g), and "g" is a json_valid node`}},
		{"root reachable from another root", "roots: [extract, judge]\n" + valid,
			[]string{`node "judge": root "judge" is reachable from root "extract" (extract -> judge)`,
				`node "judge": only task nodes can be one of several roots (roots: extract, judge)`}},
		{"explicit root with parents", `
roots: [b]
nodes:
  - {id: x, kind: task, instructions: x, params: [input], children: [b]}
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}
`, []string{`node "b": root "b" has parents (x): a root cannot be a child or a then target`}},
		{"task reads nothing", strings.Replace(valid, "    params: [actual_output]\n", "", 1),
			[]string{`node "extract": task node reads nothing: it has neither params nor a parent task`}},
		{"task dead end", strings.Replace(valid, "    children: [judge]\n", "", 1),
			[]string{`node "extract": task node has no children: its output goes nowhere (dead end)`}},
		{"code task dead end", `
nodes:
  - {id: s, kind: summarise}
`, []string{`node "s": summarise node has no children: its output goes nowhere (dead end)`}},
		{"task with verdicts", strings.Replace(valid, "    children: [judge]\n", "    children: [judge]\n    verdicts: {\"true\": {score: 1}}\n", 1),
			[]string{`node "extract": task node produces output and takes no verdicts`}},
		{"task without instructions", strings.Replace(valid, "    instructions: Extract the claims.\n", "", 1),
			[]string{`node "extract": task node needs instructions`}},
		{"binary without criteria", strings.Replace(valid, "    criteria: Are the claims supported?\n", "", 1),
			[]string{`node "judge": binary node needs criteria`}},
		{"code node with criteria", strings.Replace(valid, "    kind: json_valid\n", "    kind: json_valid\n    criteria: x\n", 1),
			[]string{`node "gate": code nodes take no criteria (put settings in config)`}},
		{"decision node with children", strings.Replace(valid, "    kind: json_valid\n", "    kind: json_valid\n    children: [judge]\n", 1),
			[]string{`node "gate": decision node (json_valid) has children judge: decision nodes lead on through verdicts (then), not children`}},
		{"decision node with output label", strings.Replace(valid, "    criteria: Are the claims supported?\n", "    criteria: Are the claims supported?\n    output_label: X\n", 1),
			[]string{`node "judge": binary nodes take no output_label`}},
		{"child listed twice", strings.Replace(valid, "children: [judge]", "children: [judge, judge]", 1),
			[]string{`node "extract": children: "judge" listed twice`}},
		{"unknown child metric", strings.Replace(valid, "metric: helpfulness", "metric: ghostly", 1),
			[]string{`node "judge": verdict "false": unknown child metric "ghostly"`}},
		{"child metric is the dag itself", strings.Replace(valid, "metric: helpfulness", "metric: quality", 1),
			[]string{`node "judge": verdict "false": child metric "quality" is this dag metric itself`}},
		{"kind not provided", strings.Replace(valid, "kind: json_valid", "kind: xml_valid", 1),
			[]string{`test.yaml:3: node "gate": kind "xml_valid" is not provided by any loaded plugin`}},
		{"metric kind as node", strings.Replace(valid, "kind: json_valid", "kind: geval", 1),
			[]string{`node "gate": kind "geval" is a metric kind, not a node kind`}},
		{"unknown aggregate", "aggregate: median\n" + valid,
			[]string{`unknown aggregate "median" (want min, mean or max)`}},
		{"unknown reason", "reason: vibes\n" + valid,
			[]string{`unknown reason "vibes" (want path or judge)`}},
		{"no nodes", "nodes: []\n", []string{"no nodes"}},
		{"empty param", strings.Replace(valid, "params: [actual_output]", `params: [""]`, 1),
			[]string{`node "extract": params[0] is empty`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := ParseYAML([]byte(tt.src), "test.yaml")
			if err == nil {
				_, _, err = Validate(spec, testEnv())
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not *dag.Error: %v", err, err)
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(de.Problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem contains %q; got:\n%v", w, err)
				}
			}
		})
	}
}

// TestValidateListsAllProblems checks that problems accumulate instead of
// stopping at the first.
func TestValidateListsAllProblems(t *testing.T) {
	src := `
aggregate: median
nodes:
  - {id: a, kind: binary, criteria: c, params: [input], verdicts: {"true": {then: ghost}, "false": {score: 12}}}
  - {id: b, kind: xml, verdicts: {"true": {score: 1}}}
`
	spec, err := ParseYAML([]byte(src), "all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Validate(spec, testEnv())
	var de *Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		`all.yaml:2: unknown aggregate "median" (want min, mean or max)`,
		`all.yaml:4: node "a": verdict "false": score 12 is outside 0–10`,
		`all.yaml:5: node "b": kind "xml" is not provided by any loaded plugin`,
		`all.yaml:4: node "a": verdict "true": then: unknown node id "ghost"`,
	}
	for _, w := range want {
		if !slices.Contains(de.Problems, w) {
			t.Errorf("missing problem %q in:\n%s", w, strings.Join(de.Problems, "\n"))
		}
	}
	if !strings.HasPrefix(err.Error(), "dag: ") || !strings.Contains(err.Error(), "problems:") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestValidateWarnings(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unreachable without parents", "roots: [gate]\n" + valid + `
  - {id: lonely, kind: binary, criteria: c, params: [input], verdicts: {"true": {score: 1}, "false": {score: 0}}}
`, `node "lonely": unreachable: no parents and not among roots (gate); it never runs`},
		{"unreachable child of unreachable", "roots: [gate]\n" + valid + `
  - {id: orphan, kind: task, instructions: x, params: [input], children: [leaf]}
  - {id: leaf, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}
`, `node "leaf": unreachable from the roots (gate); it never runs`},
		{"choice with one verdict", `
nodes:
  - {id: tone, kind: choice, criteria: c, params: [input], verdicts: {formal: {score: 1}}}
`, `node "tone": choice node has one verdict: the judge has no choice`},
		{"binary reads nothing", `
nodes:
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}
`, `node "b": binary node reads nothing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := ParseYAML([]byte(tt.src), "w.yaml")
			if err != nil {
				t.Fatal(err)
			}
			g, warnings, err := Validate(spec, testEnv())
			if err != nil || g == nil {
				t.Fatalf("err = %v", err)
			}
			if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, tt.want) }) {
				t.Errorf("warnings %q lack %q", warnings, tt.want)
			}
		})
	}
}

func TestValidateMultipleTaskRoots(t *testing.T) {
	g := mustGraph(t, `
nodes:
  - {id: a, kind: task, instructions: x, params: [input], children: [j]}
  - {id: s, kind: summarise, children: [j]}
  - {id: j, kind: binary, criteria: c, verdicts: {"true": {score: 1}, "false": {score: 0}}}
`)
	if got := joined(nodeIDs(g.Roots)); got != "a,s" {
		t.Errorf("roots = %s", got)
	}
	if got := joined(g.RequiredFields()); got != "input,notes" {
		t.Errorf("RequiredFields = %s", got)
	}
	if got := joined(g.Node("j").Verdicts); got != "false,true" {
		t.Errorf("verdicts = %s", got)
	}
}

func TestValidateNilSpec(t *testing.T) {
	if _, _, err := Validate(nil, testEnv()); err == nil {
		t.Fatal("nil spec validated")
	}
}

// A graph where some node can never run, or some verdict can never be
// followed by a score, is rejected before any case runs; it used to be
// accepted and fail each case with "no leaf fired". The verdicts that
// decide are named.
func TestValidateLeafReach(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // the problems, exactly
	}{
		{"then into a node that needs the other verdict's task", `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [a, j]}
  - {id: a, kind: binary, criteria: c, verdicts: {"true": {then: j}, "false": {then: k}}}
  - {id: k, kind: task, instructions: y, params: [input], children: [j]}
  - {id: j, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
`, []string{
			`test.yaml:4: node "a": verdict "true": then "j", which can never run: no score can follow this verdict`,
			`test.yaml:6: node "j": can never run: it needs the output of k, which comes only when a answers "false", but a leads to it only on "true"`,
		}},
		{"two tasks of exclusive verdicts", `
nodes:
  - {id: g, kind: traffic, params: [input], verdicts: {green: {then: t1}, amber: {then: t2}, red: {score: 0}}}
  - {id: t1, kind: task, instructions: x, params: [input], children: [j]}
  - {id: t2, kind: task, instructions: y, params: [input], children: [j]}
  - {id: j, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
`, []string{
			`test.yaml:6: node "j": can never run: it needs the output of t1, which comes only when g answers "green", and the output of t2, which comes only when g answers "amber"`,
		}},
		{"then into a node that runs only after another verdict", `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [a, b]}
  - {id: a, kind: binary, criteria: c, verdicts: {"true": {then: j}, "false": {then: k}}}
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {then: j}, "false": {score: 0}}}
  - {id: k, kind: task, instructions: y, params: [input], children: [j]}
  - {id: j, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
`, []string{
			`test.yaml:4: node "a": verdict "true": then "j", which never runs after this verdict: it needs the output of k, which comes only when a answers "false"`,
		}},
		{"then into a node whose way on needs the other verdict", `
nodes:
  - {id: r, kind: task, instructions: x, params: [input], children: [n, m]}
  - {id: n, kind: binary, criteria: c, verdicts: {"true": {then: t}, "false": {then: k}}}
  - {id: m, kind: binary, criteria: c, verdicts: {"true": {then: t}, "false": {score: 0}}}
  - {id: t, kind: binary, criteria: c, verdicts: {"true": {then: u}, "false": {then: u}}}
  - {id: k, kind: task, instructions: y, params: [input], children: [u]}
  - {id: u, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
`, []string{
			`test.yaml:4: node "n": verdict "true": then "t", after which no score can follow: the nodes "t" leads to cannot run after this verdict`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := ParseYAML([]byte(tt.src), "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = Validate(spec, testEnv())
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want %d problems", err, len(tt.want))
			}
			if !slices.Equal(de.Problems, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(de.Problems, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Graphs where every verdict can reach a score validate, however their
// verdicts combine.
func TestValidateLeafReachAccepts(t *testing.T) {
	for name, src := range map[string]string{
		// u needs both a's "true" (through w) and b's "true": an AND of
		// two gates, each verdict of which can still reach a score.
		"two gates in series": `
nodes:
  - {id: t, kind: task, instructions: x, params: [input], children: [a, b]}
  - {id: a, kind: binary, criteria: c, verdicts: {"true": {then: w}, "false": {score: 0}}}
  - {id: b, kind: binary, criteria: c, verdicts: {"true": {then: u}, "false": {score: 5}}}
  - {id: w, kind: task, instructions: y, params: [input], children: [u]}
  - {id: u, kind: binary, criteria: c, verdicts: {"true": {score: 10}, "false": {score: 0}}}
`,
		// a node every verdict of which leads to the same next node adds
		// no condition to it, however many are chained
		"chained choices": chain(12),
	} {
		t.Run(name, func(t *testing.T) {
			spec, err := ParseYAML([]byte(src), "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, warnings, err := Validate(spec, testEnv())
			if err != nil || len(warnings) > 0 {
				t.Fatalf("err %v, warnings %q", err, warnings)
			}
		})
	}
}

// chain is n traffic nodes, every verdict of each leading to the next.
func chain(n int) string {
	var b strings.Builder
	b.WriteString("nodes:\n")
	for i := 0; i < n; i++ {
		next := fmt.Sprintf("{then: c%d}", i+1)
		if i == n-1 {
			next = "{score: 10}"
		}
		fmt.Fprintf(&b, "  - {id: c%d, kind: traffic, params: [input], verdicts: {red: %s, amber: %s, green: %s}}\n", i, next, next, next)
	}
	return b.String()
}

// A graph that runs in more ways than the check follows validates with a
// warning: the run-time check ("no leaf fired") still stands behind it.
func TestValidateLeafReachTooManyWays(t *testing.T) {
	// Each stage reaches the next through one of two gates, so the ways
	// to reach stage i double each time and none subsumes another.
	var b strings.Builder
	b.WriteString("nodes:\n")
	const stages = 10
	for i := 0; i < stages; i++ {
		next := fmt.Sprintf("{then: d%d}", i+1)
		if i == stages-1 {
			next = "{score: 10}"
		}
		fmt.Fprintf(&b, "  - {id: d%d, kind: regex_match, params: [input], verdicts: {\"true\": {then: x%d}, \"false\": {then: y%d}}}\n", i, i, i)
		fmt.Fprintf(&b, "  - {id: x%d, kind: regex_match, verdicts: {\"true\": %s, \"false\": {score: 1}}}\n", i, next)
		fmt.Fprintf(&b, "  - {id: y%d, kind: regex_match, verdicts: {\"true\": %s, \"false\": {score: 2}}}\n", i, next)
	}
	spec, err := ParseYAML([]byte(b.String()), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, warnings, err := Validate(spec, testEnv())
	if err != nil || g == nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "not checked that every verdict can reach a score") }) {
		t.Errorf("warnings %q", warnings)
	}
}

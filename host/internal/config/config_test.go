package config_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
	"github.com/agentanvil/anvil/host/internal/pluginconfig"
)

const good = `version: 1
dataset: cases.jsonl
judges:
  default: {model: m, base_url: "http://127.0.0.1:9/v1"}
plugins:
  textcheck: {path: tc.wasm, sha256: "sha256:00", grants: {judge: false}, limits: {timeout: 5s}}
metrics:
  - name: a
    kind: geval
    params: {criteria: c, evaluation_params: [input]}
  - name: a
    kind: geval
    threshold: 0.9
    gate: false
`

func TestParseGood(t *testing.T) {
	cfg, err := config.Parse("dir/anvil.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics[0].Key != "a#1" || cfg.Metrics[1].Key != "a#2" {
		t.Fatalf("keys = %q %q", cfg.Metrics[0].Key, cfg.Metrics[1].Key)
	}
	if cfg.Metrics[0].Line != 8 || cfg.Metrics[1].Line != 11 {
		t.Fatalf("lines = %d %d", cfg.Metrics[0].Line, cfg.Metrics[1].Line)
	}
	if cfg.Defaults.Judge != "default" {
		t.Fatalf("the only judge is not the default: %q", cfg.Defaults.Judge)
	}
	if got := cfg.Threshold(cfg.Metrics[0]); got != 0.5 {
		t.Fatalf("default threshold = %v", got)
	}
	if cfg.Metrics[1].Gated() || !cfg.Metrics[0].Gated() {
		t.Fatal("gate flags wrong")
	}
	if got := cfg.Resolve(cfg.Plugins["textcheck"].Path); got != "dir/tc.wasm" {
		t.Fatalf("resolve = %q", got)
	}
	p, err := cfg.Metrics[0].ParamsJSON()
	if err != nil || string(p) != `{"criteria":"c","evaluation_params":["input"]}` {
		t.Fatalf("params = %s, %v", p, err)
	}
	if cfg.Plugins["textcheck"].Limits.Timeout.Std().Seconds() != 5 {
		t.Fatalf("limits.timeout = %v", cfg.Plugins["textcheck"].Limits.Timeout)
	}
	h1 := cfg.Hash(map[string]string{"textcheck": "sha256:00"})
	h2 := cfg.Hash(map[string]string{"textcheck": "sha256:01"})
	if h1 == h2 || h1 != cfg.Hash(map[string]string{"textcheck": "sha256:00"}) {
		t.Fatal("hash must depend on plugin digests and be stable")
	}
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"threshold range", "metrics:\n  - name: a\n    kind: geval\n    threshold: 2\n", []string{"x.yaml:4:", "outside [0, 1]"}},
		{"no kind", "metrics:\n  - name: a\n", []string{"x.yaml:2:", "kind is required"}},
		{"bad name", "metrics:\n  - name: 'a b'\n    kind: k\n", []string{"x.yaml:2:", "letters, digits"}},
		{"no metrics", "version: 1\n", []string{"no metrics"}},
		{"unknown judge", "metrics:\n  - name: a\n    kind: k\n    judge: nope\n", []string{"x.yaml:2:", `judge "nope"`}},
		{"plugin without digest", "plugins:\n  p: {path: p.wasm}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:2:", "sha256"}},
		{"plugin without path", "plugins:\n  p: {sha256: x}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:2:", "path is required"}},
		{"path and ref", "plugins:\n  p: {path: p.wasm, sha256: x, ref: 'oci://r/p:1'}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:2:", "path or ref, not both"}},
		{"ref not oci", "plugins:\n  p: {ref: 'ghcr.io/p:1'}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:2:", "want oci://"}},
		{"ref with sha256", "plugins:\n  p: {ref: 'oci://r/p:1', sha256: x}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:2:", "pinned by anvil.lock"}},
		{"publisher without key", "trust:\n  publishers:\n    team-a: {capabilities: [judge]}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:3:", "trust.publishers.team-a", "key"}},
		{"unknown capability", "trust:\n  publishers:\n    team-a: {key: a.pub, capabilities: [network]}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:3:", `"network" is not a capability`}},
		{"trust typo", "trust: {require_signature: true}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:1:", "require_signatures"}},
		{"params not a mapping", "metrics:\n  - name: a\n    kind: k\n    params: [1]\n", []string{"x.yaml:4:", "mapping"}},
		{"bad cache", "defaults: {cache: maybe}\nmetrics:\n  - {name: a, kind: k}\n", []string{"cache", "maybe"}},
		{"bad yaml", "metrics: [\n", []string{"x.yaml:1:"}},
		{"bad version", "version: 2\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:1:", "version 2"}},
		{"version 0", "version: 0\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:1:", "version 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("x.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// parseErr parses body (appending a metric when it has none) and returns
// the error text, "" when it parses.
func parseErr(t *testing.T, body string) string {
	t.Helper()
	if !strings.Contains(body, "metrics:") {
		body += "metrics:\n  - {name: m, kind: k}\n"
	}
	_, err := config.Parse("x.yaml", []byte(body))
	if err == nil {
		return ""
	}
	return err.Error()
}

// Unknown keys and wrong types name the file, the line, the key and where
// it is — never a Go type or field name — and suggest the key meant.
func TestKeyErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"top level", "datset: x\n",
			`x.yaml:1: unknown key "datset" (did you mean "dataset"?)`},
		{"metric", "metrics:\n  - name: x\n    kind: geval\n    treshold: 1\n",
			`x.yaml:4: unknown key "treshold" in metric "x" (did you mean "threshold"?)`},
		{"metric without a name", "metrics:\n  - kind: geval\n    gte: false\n",
			`x.yaml:3: unknown key "gte" in metrics[0] (did you mean "gate"?)`},
		{"judge", "judges:\n  j:\n    modle: m\n",
			`x.yaml:3: unknown key "modle" in judge "j" (did you mean "model"?)`},
		{"judge price", "judges:\n  j: {price: {input_per_milion: 1}}\n",
			`x.yaml:2: unknown key "price.input_per_milion" in judge "j" (did you mean "price.input_per_million"?)`},
		{"plugin", "plugins:\n  p:\n    path: p.wasm\n    sha: x\n",
			`x.yaml:4: unknown key "sha" in plugin "p"`},
		{"plugin limits", "plugins:\n  p:\n    path: p.wasm\n    sha256: x\n    limits:\n      timout: 5s\n",
			`x.yaml:6: unknown key "limits.timout" in plugin "p" (did you mean "limits.timeout"?)`},
		{"plugin grants", "plugins:\n  p:\n    path: p.wasm\n    sha256: x\n    grants: {judeg: true}\n",
			`x.yaml:5: unknown key "grants.judeg" in plugin "p" (did you mean "grants.judge"?)`},
		{"defaults", "defaults:\n  concurency: 3\n",
			`x.yaml:2: unknown key "concurency" in defaults (did you mean "concurrency"?)`},
		{"metric type", "metrics:\n  - name: x\n    kind: geval\n    threshold: high\n",
			`x.yaml:4: key "threshold" in metric "x": want a number, got "high"`},
		{"metric bool", "metrics:\n  - name: x\n    kind: geval\n    gate: maybe\n",
			`x.yaml:4: key "gate" in metric "x": want true or false, got "maybe"`},
		{"top-level type", "dataset: [a, b]\n",
			`x.yaml:1: key "dataset": want a string, got a list`},
		{"metrics not a list", "metrics: {a: 1}\n",
			`x.yaml:1: key "metrics": want a list, got a mapping`},
		{"judge not a mapping", "judges:\n  j: [1]\n",
			`x.yaml:2: judge "j": want a mapping, got a list`},
		{"judge whole number", "judges:\n  j: {max_concurrency: 1.5}\n",
			`x.yaml:2: key "max_concurrency" in judge "j": want a whole number, got "1.5"`},
		{"quoted number", "judges:\n  j: {max_concurrency: \"4\"}\n",
			`x.yaml:2: key "max_concurrency" in judge "j": want a whole number, got the string "4"`},
		{"plugin grants type", "plugins:\n  p: {path: p.wasm, sha256: x, grants: {judge: sometimes}}\n",
			`x.yaml:2: key "grants.judge" in plugin "p": want true or false, got "sometimes"`},
		{"out of range", "plugins:\n  p: {path: p.wasm, sha256: x, limits: {memory_pages: 99999999999}}\n",
			`x.yaml:2: key "limits.memory_pages" in plugin "p": 99999999999 is out of range (want a number > 0)`},
		{"repeated key", "metrics:\n  - name: x\n    kind: k\n    kind: j\n",
			`x.yaml:4: key "kind" in metric "x" given twice (first at line 3)`},
		{"not a mapping", "- 1 # metrics: none\n",
			`x.yaml:1: the config: want a mapping, got a list`},
		{"several, in line order", "defaults: {concurency: 1}\njudges:\n  j: {modle: m}\n",
			"x.yaml:1: unknown key \"concurency\" in defaults (did you mean \"concurrency\"?)\n" +
				"x.yaml:3: unknown key \"modle\" in judge \"j\" (did you mean \"model\"?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml); got != tt.want {
				t.Errorf("error\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// Given numbers say what they mean: an explicit 0 or a negative count,
// limit or timeout is an error naming the key and line, never the default.
func TestNumbersGivenMustMeanSomething(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"defaults.concurrency 0", "defaults: {concurrency: 0}\n",
			`x.yaml:1: key "concurrency" in defaults: 0 must be > 0 (leave the key out for the default)`},
		{"defaults.concurrency negative", "defaults:\n  concurrency: -4\n",
			`x.yaml:2: key "concurrency" in defaults: -4 must be > 0 (leave the key out for the default)`},
		{"judge timeout 0", "judges:\n  j:\n    timeout: 0\n",
			`x.yaml:3: key "timeout" in judge "j": 0 must be > 0 (leave the key out for the default)`},
		{"judge timeout 0s", "judges:\n  j:\n    timeout: 0s\n",
			`x.yaml:3: key "timeout" in judge "j": 0s must be > 0 (leave the key out for the default)`},
		{"judge timeout negative", "judges:\n  j:\n    timeout: -5s\n",
			`x.yaml:3: key "timeout" in judge "j": -5s must be > 0 (leave the key out for the default)`},
		{"judge timeout empty", "judges:\n  j:\n    timeout: \"\"\n",
			`x.yaml:3: key "timeout" in judge "j": "" must be > 0 (leave the key out for the default)`},
		{"judge max_retries negative", "judges:\n  j: {max_retries: -1}\n",
			`x.yaml:2: key "max_retries" in judge "j": -1 is negative (0 means no retries)`},
		{"judge price negative", "judges:\n  j: {price: {output_per_million: -1}}\n",
			`x.yaml:2: key "price.output_per_million" in judge "j": -1 must not be negative`},
		{"judge temperature nan", "judges:\n  j: {temperature: .nan}\n",
			`x.yaml:2: key "temperature" in judge "j": want a finite number, got .nan`},
		{"metric threshold negative", "metrics:\n  - {name: x, kind: k, threshold: -0.1}\n",
			`x.yaml:2: key "threshold" in metric "x": -0.1 is outside [0, 1]`},
		{"metric threshold nan", "metrics:\n  - {name: x, kind: k, threshold: .nan}\n",
			`x.yaml:2: key "threshold" in metric "x": want a finite number, got .nan`},
		{"metric max_error_rate", "metrics:\n  - name: x\n    kind: k\n    max_error_rate: 1.5\n",
			`x.yaml:4: key "max_error_rate" in metric "x": 1.5 is outside [0, 1]`},
		{"defaults threshold", "defaults: {threshold: 7}\n",
			`x.yaml:1: key "threshold" in defaults: 7 is outside [0, 1]`},
		{"metric threshold 0 is a threshold", "metrics:\n  - {name: x, kind: k, threshold: 0, max_error_rate: 0}\n", ""},
		{"null is absent", "judges:\n  j: {timeout: ~, max_concurrency: null}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml); got != tt.want {
				t.Errorf("error\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// Every count, limit and timeout of a judge and of a plugin's limits
// follows the rule, found by reflection: a field added to judgeconfig.Config
// or pluginconfig.Limits is covered without a line of code, and a field of
// a kind the rule does not cover fails here until it is decided.
func TestEveryLimitFollowsTheRule(t *testing.T) {
	check := func(t *testing.T, typ reflect.Type, body func(key, val string) string, quote func(key string) string, except map[string]bool) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if except[key] {
				continue
			}
			switch f.Type.Kind() {
			case reflect.String, reflect.Bool, reflect.Struct, reflect.Pointer:
				continue // names, switches, nested prices; numbers under them are tested above
			case reflect.Map:
				if f.Type.Elem().Kind() == reflect.String {
					continue // text by name (headers): no numbers
				}
				t.Errorf("%s.%s: a %s; decide what 0 and negative values mean and cover it here", typ, f.Name, f.Type)
				continue
			case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Uint:
			default:
				t.Errorf("%s.%s: a %s; decide what 0 and negative values mean and cover it here", typ, f.Name, f.Type)
				continue
			}
			for _, val := range []string{"0", "-1"} {
				got := parseErr(t, body(key, val))
				if !strings.Contains(got, quote(key)) || !(strings.Contains(got, "must be > 0") || strings.Contains(got, "out of range")) {
					t.Errorf("%s: %s: error %q does not reject it naming the key", key, val, got)
				}
			}
			if got := parseErr(t, body(key, "3")); got != "" {
				t.Errorf("%s: 3: %s", key, got)
			}
		}
	}
	t.Run("judge", func(t *testing.T) {
		check(t, reflect.TypeFor[judgeconfig.Config](),
			func(k, v string) string { return "judges:\n  j:\n    " + k + ": " + v + "\n" },
			func(k string) string { return `x.yaml:3: key "` + k + `" in judge "j"` },
			map[string]bool{"max_retries": true})
	})
	t.Run("plugin limits", func(t *testing.T) {
		check(t, reflect.TypeFor[pluginconfig.Limits](),
			func(k, v string) string {
				return "plugins:\n  p:\n    path: p.wasm\n    sha256: x\n    limits:\n      " + k + ": " + v + "\n"
			},
			func(k string) string { return `x.yaml:6: key "limits.` + k + `" in plugin "p"` },
			nil)
	})
}

// max_retries: 0 means no retries, and the judge then makes one attempt;
// it used to be replaced by the default 4.
func TestMaxRetriesZeroMeansNoRetries(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte(`judges:
  none: &base {model: m, max_retries: 0}
  some: {<<: *base, max_retries: 2}
  inherit: {<<: *base}
  alias: *base
  unset: {model: m}
metrics:
  - {name: a, kind: k, judge: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"none": 0, "some": 2, "inherit": 0, "alias": 0, "unset": judgeconfig.DefaultMaxRetries} {
		if got := cfg.Judges[name].WithDefaults().MaxRetries; got != want {
			t.Errorf("judge %s: %d retries after defaults, want %d", name, got, want)
		}
	}
}

// One duration type: "30s" and 30 are the same for judges and plugins.
func TestDurations(t *testing.T) {
	for _, v := range []string{"30", "30s", "\"30\"", "0.5m", "30.0"} {
		cfg, err := config.Parse("x.yaml", []byte(`judges:
  j: {model: m, timeout: `+v+`}
plugins:
  p: {path: p.wasm, sha256: x, limits: {timeout: `+v+`, compile_timeout: `+v+`}}
metrics:
  - {name: a, kind: k}
`))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		l := cfg.Plugins["p"].Limits
		if j := cfg.Judges["j"].Timeout.Std(); j != 30*time.Second || l.Timeout.Std() != j || l.CompileTimeout.Std() != j {
			t.Errorf("%s: judge %v, plugin %v, compile %v; want 30s", v, j, l.Timeout, l.CompileTimeout)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"judges:\n  j:\n    timeout: soon\n",
			`x.yaml:3: key "timeout" in judge "j": want a duration like "30s" or a number of seconds, got "soon"`},
		{"plugins:\n  p:\n    path: p.wasm\n    sha256: x\n    limits: {timeout: 5 s}\n",
			`x.yaml:5: key "limits.timeout" in plugin "p": want a duration like "30s" or a number of seconds, got "5 s"`},
		{"judges:\n  j:\n    timeout: [30]\n",
			`x.yaml:3: key "timeout" in judge "j": want a duration like "30s" or a number of seconds, got a list`},
	} {
		if got := parseErr(t, tc.yaml); got != tc.want {
			t.Errorf("error\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// A value with its own decoder (plugin isolation) is rejected in its own
// words, with the key and line.
func TestOwnDecoderErrors(t *testing.T) {
	got := parseErr(t, "plugins:\n  p:\n    path: p\n    sha256: x\n    transport: process\n    isolation: bogus\n")
	for _, want := range []string{`x.yaml:6: key "isolation" in plugin "p": `, `"bogus"`, `"required"`} {
		if !strings.Contains(got, want) {
			t.Errorf("error %q lacks %q", got, want)
		}
	}
}

func TestNumberTokens(t *testing.T) {
	got := parseErr(t, "judges:\n  j:\n    model: m\n    number_tokens: digit\n")
	want := `x.yaml:4: key "number_tokens" in judge "j": number_tokens "digit": want whole, digits or auto`
	if got != want {
		t.Errorf("error\n%s\nwant\n%s", got, want)
	}
	for _, v := range []judgeconfig.NumberTokens{judgeconfig.NumbersWhole, judgeconfig.NumbersDigits, judgeconfig.NumbersAuto} {
		cfg, err := config.Parse("x.yaml", []byte("version: 1\njudges:\n  j: {model: m, number_tokens: "+string(v)+"}\nmetrics:\n  - {name: m, kind: k}\n"))
		if err != nil {
			t.Fatalf("number_tokens %s: %v", v, err)
		}
		if cfg.Judges["j"].NumberTokens != v {
			t.Errorf("number_tokens %s decoded as %q", v, cfg.Judges["j"].NumberTokens)
		}
	}
}

// number_tokens changes scores, so it changes the config hash — but only
// when it overrides the model family's rule, so that the hash of a config
// that does not set it (or sets what auto gives) is the one it always had.
func TestNumberTokensInHash(t *testing.T) {
	hash := func(judge string) string {
		cfg, err := config.Parse("x.yaml", []byte("version: 1\njudges:\n  j: {"+judge+"}\nmetrics:\n  - {name: m, kind: geval, judge: j}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Hash(nil)
	}
	plain := hash("model: gpt-4o-mini")
	for _, same := range []string{"model: gpt-4o-mini, number_tokens: auto", "model: gpt-4o-mini, number_tokens: whole"} {
		if h := hash(same); h != plain {
			t.Errorf("%s: hash %s, want the unset config's %s", same, h, plain)
		}
	}
	if h := hash("model: gpt-4o-mini, number_tokens: digits"); h == plain {
		t.Errorf("number_tokens: digits overriding gpt-4o-mini's whole left the hash unchanged")
	}
}

// judges.<k>.name is the key or an error; it is never silently ignored.
func TestJudgeName(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte("judges:\n  j: {name: j, model: m}\n  k: {model: m}\nmetrics:\n  - {name: a, kind: k}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Judges["j"].Name != "j" || cfg.Judges["k"].Name != "k" {
		t.Errorf("names %q %q", cfg.Judges["j"].Name, cfg.Judges["k"].Name)
	}
	got := parseErr(t, "version: 1\njudges:\n  j: {name: other, model: m}\n")
	want := `x.yaml:3: judge "j": name "other" differs from its key "j" (the key is the judge's name: drop name or make them equal)`
	if got != want {
		t.Errorf("error\n%s\nwant\n%s", got, want)
	}
}

// A YAML syntax error names the line that is wrong, not the one before it
// or the start of the enclosing block.
func TestSyntaxErrorLines(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"mis-indented key", "version: 1\nmetrics:\n  - name: a\n    kind: geval\n   bad: x\n",
			"x.yaml:5: did not find expected '-' indicator"},
		{"key outside its mapping", "version: 1\njudges:\n  a:\n    model: m\n   timeout: 3\n",
			"x.yaml:5: did not find expected key"},
		{"list item in a mapping", "version: 1\ndataset: d\n- x\n",
			"x.yaml:3: did not find expected key"},
		{"unclosed flow mapping", "version: 1\nmetrics:\n  - {name: a, kind: k\n",
			"x.yaml:3: did not find expected ',' or '}'"},
		{"flow sequence", "version: 1\nmetrics:\n  - name: a\n    params: {steps: [a, b}\n",
			"x.yaml:4: did not find expected ',' or ']'"},
		{"unclosed at the end", "version: 1\nmetrics: [\n",
			"x.yaml:2: did not find expected node content"},
		{"tab", "version: 1\nmetrics:\n\t- name: a\n",
			"x.yaml:3: found character that cannot start any token"},
		{"tab in a plain scalar's lookahead", "a: 1\nb: 2\n\tc: 3\n",
			"x.yaml:3: found a tab character that violates indentation"},
		{"unclosed quote", "version: 1\nmetrics:\n  - name: \"a\n",
			"x.yaml:3: found unexpected end of stream"},
		{"first line", "a: b: c\n",
			"x.yaml:1: mapping values are not allowed in this context"},
		{"unknown anchor", "version: 1\nmetrics:\n  - name: *nope\n",
			`x.yaml:3: unknown anchor "nope" referenced`},
		{"second document", "metrics:\n  - {name: a, kind: k}\n---\nmetrics: []\n",
			"x.yaml:3: a second YAML document: a config is one document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.yaml); got != tt.want {
				t.Errorf("error\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("metrics:\n  - name: a\n    kind: k\n    params: {x: [1, {y: z}]}\n"))
	f.Add([]byte("metrics: &a [*a]\n"))
	f.Add([]byte("judges:\n  a: &b {model: m, max_retries: 0, timeout: 30}\n  b: {<<: *b, timeout: 2s}\nmetrics:\n  - {name: a, kind: k, threshold: 1}\n"))
	f.Add([]byte("plugins:\n  p: {path: p, sha256: x, limits: {timeout: 1.5, memory_pages: 2, pool_size: 1}, grants: {judge: true}}\ndefaults: {concurrency: 2}\nmetrics:\n  - {name: a, kind: k}\n"))
	f.Add([]byte("version: 1\nmetrics:\n  - name: a\n    kind: geval\n   bad: x\n"))
	f.Add([]byte("judges:\n  j: &a {model: m, <<: *a}\nmetrics:\n  - {name: a, kind: k}\n"))
	f.Add([]byte("judges: &js\n  <<: *js\n  j: {model: m}\nmetrics:\n  - {name: a, kind: k}\n"))
	f.Add([]byte("x: &a [*a, *a]\n"))
	f.Add([]byte("judges: {a: {model: m}, b: {model: n}}\nmetrics:\n  - {name: a, kind: k, judge_cascade: [a, b], escalate_band: [0.1, 0.9], samples: {max: 5, min: 2, stop_at_ci_width: 0.1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse("f.yaml", data)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.yaml:") {
					t.Fatalf("error line %q does not name the file", line)
				}
			}
			return
		}
		// What parses obeys the rule for numbers.
		for name, j := range cfg.Judges {
			if j == nil {
				continue
			}
			if j.Name != name {
				t.Fatalf("judge %q named %q", name, j.Name)
			}
			nonNegative(t, reflect.ValueOf(*j), "max_retries")
		}
		for _, p := range cfg.Plugins {
			nonNegative(t, reflect.ValueOf(p.Limits), "")
		}
		if c := cfg.Defaults.Concurrency; c < 0 {
			t.Fatalf("defaults.concurrency %d", c)
		}
		for _, m := range cfg.Metrics {
			if th := cfg.Threshold(m); !(th >= 0 && th <= 1) {
				t.Fatalf("metric %s threshold %v", m.Key, th)
			}
			if r := m.MaxErrorRate; r != nil && !(*r >= 0 && *r <= 1) {
				t.Fatalf("metric %s max_error_rate %v", m.Key, *r)
			}
			// A cascade's band is a pass-probability interval; adaptive
			// samples are bounded and ordered.
			if b := m.Band(); len(m.JudgeCascade) > 0 && !(b[0] >= 0 && b[0] <= b[1] && b[1] <= 1) {
				t.Fatalf("metric %s escalate_band %v", m.Key, b)
			}
			if s := m.Samples; s.Adaptive() && !(s.Min <= s.Max && s.Max <= config.MaxSamples && s.StopAtCIWidth > 0 && s.StopAtCIWidth <= 1) {
				t.Fatalf("metric %s samples %+v", m.Key, s)
			}
			if _, err := m.ParamsJSON(); err != nil {
				return
			}
		}
		_ = cfg.Hash(nil)
	})
}

// nonNegative fails on a negative or non-finite number in struct v; the
// field tagged except may be -1 (judgeconfig.Config's "no retries").
func nonNegative(t *testing.T, v reflect.Value, except string) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f, key := v.Field(i), strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0]
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if f.Int() < 0 && !(key == except && f.Int() == -1) {
				t.Fatalf("%s = %d", key, f.Int())
			}
		case reflect.Float32, reflect.Float64:
			if x := f.Float(); !(x >= 0) || math.IsInf(x, 0) {
				t.Fatalf("%s = %v", key, x)
			}
		case reflect.Struct:
			nonNegative(t, f, "")
		}
	}
}

func TestPluginByReference(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte(`trust:
  require_signatures: true
  publishers:
    team-a: {key: team-a.pub, capabilities: []}
plugins:
  tc: {ref: "oci://127.0.0.1:5000/team-a/textcheck:1.0", require_signature: true}
metrics:
  - {name: a, kind: exact_match}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Plugins["tc"]
	if p.Ref != "oci://127.0.0.1:5000/team-a/textcheck:1.0" || !p.RequireSignature || !cfg.Trust.RequireSignatures {
		t.Errorf("parsed %+v %+v", p, cfg.Trust)
	}
	if pub := cfg.Trust.Publishers["team-a"]; pub == nil || pub.Key != "team-a.pub" || pub.Line != 4 || len(pub.Capabilities) != 0 {
		t.Errorf("publisher %+v", pub)
	}
}

package config_test

import (
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/config"
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
		{"unknown key", "metrics:\n  - name: a\n    kind: geval\n    treshold: 1\n", []string{"x.yaml:4:", "treshold"}},
		{"wrong type", "metrics:\n  - name: a\n    kind: geval\n    threshold: high\n", []string{"x.yaml:4:", "high"}},
		{"threshold range", "metrics:\n  - name: a\n    kind: geval\n    threshold: 2\n", []string{"x.yaml:2:", "outside [0, 1]"}},
		{"no kind", "metrics:\n  - name: a\n", []string{"x.yaml:2:", "kind is required"}},
		{"bad name", "metrics:\n  - name: 'a b'\n    kind: k\n", []string{"x.yaml:2:", "letters, digits"}},
		{"no metrics", "version: 1\n", []string{"no metrics"}},
		{"unknown judge", "metrics:\n  - name: a\n    kind: k\n    judge: nope\n", []string{"x.yaml:2:", `judge "nope"`}},
		{"plugin without digest", "plugins:\n  p: {path: p.wasm}\nmetrics:\n  - {name: a, kind: k}\n", []string{"x.yaml:2:", "sha256"}},
		{"params not a mapping", "metrics:\n  - name: a\n    kind: k\n    params: [1]\n", []string{"x.yaml:4:", "mapping"}},
		{"bad cache", "defaults: {cache: maybe}\nmetrics:\n  - {name: a, kind: k}\n", []string{"cache", "maybe"}},
		{"bad yaml", "metrics: [\n", []string{"x.yaml:"}},
		{"bad version", "version: 2\nmetrics:\n  - {name: a, kind: k}\n", []string{"version 2"}},
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

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("metrics:\n  - name: a\n    kind: k\n    params: {x: [1, {y: z}]}\n"))
	f.Add([]byte("metrics: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse("f.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, m := range cfg.Metrics {
			if _, err := m.ParamsJSON(); err != nil {
				return
			}
		}
		_ = cfg.Hash(nil)
	})
}

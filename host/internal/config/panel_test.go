package config_test

import (
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/host/internal/config"
)

const panelJudges = "judges:\n  a: {model: ma}\n  b: {model: mb}\n  c: {model: mc}\n"

// A panel and samples are read as written; judge: keeps working, and a
// metric without either scores once with one judge.
func TestPanelAndSamplesParse(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte(panelJudges+"defaults: {judge: a}\nmetrics:\n"+
		"  - {name: p, kind: geval, judges: [b, c, a], aggregate: median, samples: 3}\n"+
		"  - {name: one, kind: geval, judge: b}\n"+
		"  - {name: dflt, kind: geval}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, one, dflt := cfg.Metrics[0], cfg.Metrics[1], cfg.Metrics[2]
	if got := cfg.JudgeNames(p); !reflect.DeepEqual(got, []string{"b", "c", "a"}) || cfg.JudgeName(p) != "b" {
		t.Errorf("panel judges %v, first %q; want [b c a], b", got, cfg.JudgeName(p))
	}
	if p.Aggregation() != config.AggregateMedian || p.SampleCount() != 3 {
		t.Errorf("aggregation %q, samples %d; want median, 3", p.Aggregation(), p.SampleCount())
	}
	if got := cfg.JudgeNames(one); !reflect.DeepEqual(got, []string{"b"}) || one.SampleCount() != 1 || one.Aggregation() != config.AggregateMean {
		t.Errorf("judge: b gives %v, %d samples, %q", got, one.SampleCount(), one.Aggregation())
	}
	if got := cfg.JudgeNames(dflt); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("default judge gives %v; want [a]", got)
	}
}

// A config without panels or samples keeps the hash it had before they
// existed (results written then still resume); panels and samples change it.
func TestPanelAndSamplesChangeTheHash(t *testing.T) {
	hash := func(metric string) string {
		cfg, err := config.Parse("x.yaml", []byte(panelJudges+"defaults: {judge: a}\nmetrics:\n"+metric))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Hash(nil)
	}
	base := hash("  - {name: m, kind: geval}\n")
	if base != "af2be6800c7d9402" {
		t.Errorf("hash of a plain metric = %s; it changed from af2be6800c7d9402", base)
	}
	for _, m := range []string{
		"  - {name: m, kind: geval, samples: 2}\n",
		"  - {name: m, kind: geval, judges: [a, b]}\n",
		"  - {name: m, kind: geval, judges: [a, b], aggregate: median}\n",
	} {
		if hash(m) == base {
			t.Errorf("%q kept the plain metric's hash", m)
		}
	}
}

func TestPanelErrors(t *testing.T) {
	tests := []struct{ name, metric, want string }{
		{"judge and judges", "{name: m, kind: k, judge: a, judges: [b, c]}",
			"x.yaml:6: metric m: give judge or judges, not both (judges: [b, c] is a panel; judge: a is one judge)"},
		{"unknown panel judge", "{name: m, kind: k, judges: [a, zz]}",
			`x.yaml:6: metric m: judges[1]: judge "zz" is not configured under judges`},
		{"repeated panel judge", "{name: m, kind: k, judges: [a, b, a]}",
			`x.yaml:6: metric m: judges[2]: judge "a" is named twice (a panel's judges are distinct; use samples to score more than once)`},
		{"empty panel", "{name: m, kind: k, judges: []}",
			"x.yaml:6: metric m: judges is empty: name at least one judge, or drop the key"},
		{"unknown aggregate", "{name: m, kind: k, judges: [a, b], aggregate: vote}",
			`x.yaml:6: metric m: aggregate "vote" is not one of mean, median, majority`},
		{"aggregate without a panel", "{name: m, kind: k, aggregate: median}",
			`x.yaml:6: metric m: aggregate "median" needs a panel of at least two judges (judges: [a, b])`},
		{"too many samples", "{name: m, kind: k, samples: 101}",
			"x.yaml:6: metric m: samples 101 is more than 100 (each sample is a judge call per case)"},
		{"zero samples", "{name: m, kind: k, samples: 0}",
			`x.yaml:6: key "samples" in metric "m": 0 must be > 0 (leave the key out for the default)`},
		{"samples not a number", "{name: m, kind: k, samples: many}",
			`x.yaml:6: key "samples" in metric "m": want a whole number, got "many"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, panelJudges+"metrics:\n  - "+tt.metric+"\n"); got != tt.want {
				t.Errorf("error\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

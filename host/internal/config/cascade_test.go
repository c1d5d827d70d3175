package config_test

import (
	"reflect"
	"testing"

	"github.com/agentanvil/anvil/host/internal/config"
)

// A cascade and adaptive samples are read as written; the cascade's judge
// of record is its last; the band defaults.
func TestCascadeAndAdaptiveSamplesParse(t *testing.T) {
	cfg, err := config.Parse("x.yaml", []byte(panelJudges+"metrics:\n"+
		"  - {name: c, kind: geval, judge_cascade: [a, b], escalate_band: [0.2, 0.9]}\n"+
		"  - {name: d, kind: geval, judge_cascade: [a, c]}\n"+
		"  - {name: s, kind: geval, judge: a, samples: {max: 10, min: 3, stop_at_ci_width: 0.1}}\n"+
		"  - {name: f, kind: geval, judge: a, samples: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, d, s, f := cfg.Metrics[0], cfg.Metrics[1], cfg.Metrics[2], cfg.Metrics[3]
	if cfg.JudgeName(c) != "b" || !reflect.DeepEqual(c.JudgeCascade, []string{"a", "b"}) || !reflect.DeepEqual(c.Band(), []float64{0.2, 0.9}) {
		t.Errorf("cascade: judge %q, cascade %v, band %v", cfg.JudgeName(c), c.JudgeCascade, c.Band())
	}
	if !reflect.DeepEqual(d.Band(), []float64{0.15, 0.85}) {
		t.Errorf("default band %v; want [0.15 0.85]", d.Band())
	}
	want := config.Samples{Max: 10, Min: 3, StopAtCIWidth: 0.1}
	if s.Samples != want || !s.Samples.Adaptive() || s.SampleCount() != 10 || s.Samples.MinSamples() != 3 {
		t.Errorf("adaptive samples %+v (count %d, min %d)", s.Samples, s.SampleCount(), s.Samples.MinSamples())
	}
	if f.Samples != (config.Samples{N: 4}) || f.Samples.Adaptive() || f.SampleCount() != 4 {
		t.Errorf("fixed samples %+v", f.Samples)
	}
}

// A cascade and adaptive samples change the hash; the band is part of it.
func TestCascadeChangesTheHash(t *testing.T) {
	hash := func(metric string) string {
		cfg, err := config.Parse("x.yaml", []byte(panelJudges+"defaults: {judge: b}\nmetrics:\n"+metric))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Hash(nil)
	}
	seen := map[string]string{}
	for _, m := range []string{
		"  - {name: m, kind: geval, judge: b}\n",
		"  - {name: m, kind: geval, judge_cascade: [a, b]}\n",
		"  - {name: m, kind: geval, judge_cascade: [a, b], escalate_band: [0.1, 0.9]}\n",
		"  - {name: m, kind: geval, judge: b, samples: {max: 5, stop_at_ci_width: 0.1}}\n",
		"  - {name: m, kind: geval, judge: b, samples: {max: 5, stop_at_ci_width: 0.2}}\n",
	} {
		h := hash(m)
		if prev, dup := seen[h]; dup {
			t.Errorf("%q has the hash of %q", m, prev)
		}
		seen[h] = m
	}
}

func TestCascadeErrors(t *testing.T) {
	tests := []struct{ name, metric, want string }{
		{"unknown judge", "{name: m, kind: k, judge_cascade: [a, zz]}",
			`x.yaml:6: metric m: judge_cascade[1]: judge "zz" is not configured under judges`},
		{"one judge", "{name: m, kind: k, judge_cascade: [a]}",
			"x.yaml:6: metric m: judge_cascade names 1 judge(s); a cascade needs at least two (cheapest first)"},
		{"repeated judge", "{name: m, kind: k, judge_cascade: [a, a]}",
			`x.yaml:6: metric m: judge_cascade[1]: judge "a" is named twice`},
		{"with judge", "{name: m, kind: k, judge: a, judge_cascade: [a, b]}",
			"x.yaml:6: metric m: give judge or judge_cascade, not both (judge_cascade: [a, b] names the judges cheapest first)"},
		{"with a panel", "{name: m, kind: k, judges: [a, c], judge_cascade: [a, b]}",
			"x.yaml:6: metric m: give judges or judge_cascade, not both (a panel asks every judge; a cascade asks the next only when unsure)"},
		{"band inverted", "{name: m, kind: k, judge_cascade: [a, b], escalate_band: [0.9, 0.1]}",
			"x.yaml:6: metric m: escalate_band [0.9, 0.1] is inverted: low > high"},
		{"band above one", "{name: m, kind: k, judge_cascade: [a, b], escalate_band: [0.1, 1.5]}",
			"x.yaml:6: metric m: escalate_band [0.1, 1.5] is outside [0, 1] (a pass probability)"},
		{"band of three", "{name: m, kind: k, judge_cascade: [a, b], escalate_band: [0.1, 0.5, 0.9]}",
			"x.yaml:6: metric m: escalate_band has 3 values; want [low, high]"},
		{"band without cascade", "{name: m, kind: k, escalate_band: [0.1, 0.9]}",
			"x.yaml:6: metric m: escalate_band applies to a judge_cascade; this metric has none"},
		{"band negative", "{name: m, kind: k, judge_cascade: [a, b], escalate_band: [-0.1, 0.9]}",
			`x.yaml:6: key "escalate_band.0" in metric "m": -0.1 must not be negative`},
		{"min above max", "{name: m, kind: k, samples: {max: 3, min: 5, stop_at_ci_width: 0.1}}",
			"x.yaml:6: metric m: samples.min 5 is more than samples.max 3"},
		{"no max", "{name: m, kind: k, samples: {min: 2, stop_at_ci_width: 0.1}}",
			"x.yaml:6: metric m: samples.max is required in adaptive samples (the most scorings a case may take)"},
		{"no width", "{name: m, kind: k, samples: {max: 5}}",
			"x.yaml:6: metric m: samples.stop_at_ci_width is required in adaptive samples (stop once the 95% interval of a case's mean score is this wide)"},
		{"max above the bound", "{name: m, kind: k, samples: {max: 101, stop_at_ci_width: 0.1}}",
			"x.yaml:6: metric m: samples.max 101 is more than 100 (each sample is a judge call per case)"},
		{"unknown samples key", "{name: m, kind: k, samples: {max: 5, stop_at_ci_widht: 0.1}}",
			`x.yaml:6: unknown key "samples.stop_at_ci_widht" in metric "m" (did you mean "samples.stop_at_ci_width"?)`},
		{"zero min", "{name: m, kind: k, samples: {max: 5, min: 0, stop_at_ci_width: 0.1}}",
			`x.yaml:6: key "samples.min" in metric "m": 0 must be > 0 (leave the key out for the default)`},
		{"width above one", "{name: m, kind: k, samples: {max: 5, stop_at_ci_width: 2}}",
			`x.yaml:6: key "samples.stop_at_ci_width" in metric "m": 2 is outside [0, 1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, panelJudges+"metrics:\n  - "+tt.metric+"\n"); got != tt.want {
				t.Errorf("error\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

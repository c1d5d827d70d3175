package calibrate

import (
	"strings"
	"testing"
)

// A run calibrated against itself as the reference agrees perfectly; the
// labels are its scored cases only (c8 errored), one rater, each with the
// line its case is on.
func TestLabelsFromRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeResults(t, dir)
	labels, path, err := LabelsFromRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 11 scored correctness cases and 12 tone cases.
	if len(labels) != 23 || !strings.HasSuffix(path, "results.jsonl") {
		t.Fatalf("%d labels from %s; want 23 from results.jsonl", len(labels), path)
	}
	for _, l := range labels {
		if l.CaseID == "c8" && l.Metric == "correctness" {
			t.Errorf("the errored case c8 is labelled: %+v", l)
		}
		if l.Rater != ReferenceRater || l.Score == nil || l.Pass == nil || l.Line < 1 {
			t.Errorf("label %+v; want rater %q, a score, a verdict and a line", l, ReferenceRater)
		}
	}
	if l := labels[0]; l.CaseID != "c0" || *l.Score != 0.9 || !*l.Pass || l.Line != 1 {
		t.Errorf("first label %+v; want c0, 0.9, pass, line 1", l)
	}
	res, err := LoadResults(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Calibrate(path, labels, res, Options{Level: 0.95, Resamples: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, m := range rep.Metrics {
		if m.Metric != "correctness" {
			continue
		}
		seen = true
		if k, ok := m.Agreement[CohenKappa]; !ok || k.Estimate != 1 {
			t.Errorf("correctness against itself: κ %+v; want 1", m.Agreement)
		}
	}
	if !seen {
		t.Errorf("no correctness in %+v", rep.Metrics)
	}
}

func TestLabelsFromAnEmptyRun(t *testing.T) {
	t.Parallel()
	if _, _, err := LabelsFromRun(t.TempDir()); err == nil {
		t.Error("a directory without results.jsonl: want an error")
	}
}

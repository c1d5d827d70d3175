package calibrate

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/results"
)

// The data of testdata/expected.py: twelve cases, the judge's normalised
// scores (c8 errored), and two raters' 1–5 scores and pass/fail (ben did not
// label c11).
var (
	judgeScores = []float64{0.9, 0.8, 0.3, 0.7, 0.2, 0.6, 0.95, 0.62, 0.5, 0.85, 0.1, 0.65}
	anaScore    = []float64{5, 4, 2, 4, 1, 3, 5, 2, 3, 4, 1, 3}
	anaPass     = []bool{true, true, false, true, false, false, true, false, false, true, false, true}
	benScore    = []float64{5, 5, 1, 3, 2, 4, 4, 2, 2, 5, 1}
	benPass     = []bool{true, true, false, true, false, true, true, false, false, true, false}
)

func writeResults(t *testing.T, dir string) {
	t.Helper()
	var b strings.Builder
	for i, s := range judgeScores {
		mr := results.MetricResult{Metric: "correctness", Kind: "geval", Gated: true, Threshold: 0.6, Status: results.StatusPassed}
		switch {
		case i == 8:
			mr.Status = results.StatusError
		case s < 0.6:
			mr.Status, mr.Score = results.StatusFailed, &s
		default:
			mr.Score = &s
		}
		other := results.MetricResult{Metric: "tone", Kind: "geval", Status: results.StatusPassed, Score: &s}
		line, _ := json.Marshal(results.CaseResult{CaseID: fmt.Sprintf("c%d", i), ConfigHash: "h", Metrics: []results.MetricResult{mr, other}})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeLabels(t *testing.T, path string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# two raters\n")
	for i := range anaScore {
		fmt.Fprintf(&b, `{"case_id": "c%d", "metric": "correctness", "rater": "ana", "score": %g, "pass": %v}`+"\n", i, anaScore[i], anaPass[i])
		if i < len(benScore) {
			fmt.Fprintf(&b, `{"case_id": "c%d", "metric": "correctness", "rater": "ben", "score": %g, "pass": %v}`+"\n", i, benScore[i], benPass[i])
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCalibrateKnownValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeResults(t, dir)
	labelsPath := filepath.Join(dir, "labels.jsonl")
	writeLabels(t, labelsPath)
	labels, err := ReadLabels(labelsPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := LoadResults(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckLabels(labelsPath, labels, []string{"correctness", "tone"}, res.Cases, "results"); err != nil {
		t.Fatal(err)
	}
	rep, err := Calibrate(labelsPath, labels, res, Options{Resamples: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Metrics) != 1 || len(rep.Unlabelled) != 1 || rep.Unlabelled[0] != "tone" {
		t.Fatalf("metrics %d, unlabelled %v", len(rep.Metrics), rep.Unlabelled)
	}
	m := rep.Metrics[0]
	if m.Labels != 23 || m.Raters != 2 || m.LabelledCases != 12 || m.Paired != 11 || len(m.Unscored) != 1 || m.Unscored[0] != "c8" {
		t.Errorf("counts: labels %d raters %d cases %d paired %d unscored %v", m.Labels, m.Raters, m.LabelledCases, m.Paired, m.Unscored)
	}
	// testdata/expected.py (SciPy 1.17, krippendorff 0.8).
	for _, tc := range []struct {
		name string
		want float64
		n    int
	}{
		{Spearman, 0.9309645467233084, 11},
		{Kendall, 0.8390470785361213, 11},
		{Pearson, 0.9387112473404007, 11},
		{CohenKappa, 0.782608695652174, 10},
		{AlphaRatersInterval, 0.8333333333333334, 12},
		{AlphaRatersNominal, 0.8264462809917356, 12},
		{AlphaJudgeNominal, 0.7416666666666667, 11},
	} {
		ci, ok := m.Agreement[tc.name]
		if !ok {
			t.Errorf("%s missing: %s", tc.name, m.Undefined[tc.name])
			continue
		}
		if math.Abs(ci.Estimate-tc.want) > 1e-12 || ci.N != tc.n {
			t.Errorf("%s = %v over %d, want %v over %d", tc.name, ci.Estimate, ci.N, tc.want, tc.n)
		}
		if !(ci.Low <= ci.Estimate && ci.Estimate <= ci.High) || ci.Level != 0.95 || ci.Resamples < 1000 {
			t.Errorf("%s interval %+v", tc.name, ci)
		}
	}
	// c5: ana fail, ben pass: no majority.
	for _, p := range m.Points {
		if p.CaseID == "c5" && (p.HumanPass != nil || p.Human == nil || *p.Human != 3.5 || p.Ratings != 2) {
			t.Errorf("point c5 %+v", p)
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("report does not encode: %v", err)
	}
	if err := WriteFile(dir, rep); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(dir)
	if err != nil || back.Metrics[0].Agreement[Spearman] != m.Agreement[Spearman] {
		t.Fatalf("calibration.json round trip: %v", err)
	}
}

func TestUndefinedAgreementSaysWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeResults(t, dir)
	labelsPath := filepath.Join(dir, "labels.jsonl")
	// One rater, every case labelled 3 and no pass/fail: nothing to
	// correlate with, no κ, no α among raters.
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, `{"case_id": "c%d", "metric": "correctness", "score": 3}`+"\n", i)
	}
	os.WriteFile(labelsPath, []byte(b.String()), 0o644)
	labels, err := ReadLabels(labelsPath)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := LoadResults(dir, nil)
	rep, err := Calibrate(labelsPath, labels, res, Options{Resamples: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics[0]
	if len(m.Agreement) != 0 {
		t.Errorf("agreement %v, want none", m.Agreement)
	}
	for name, want := range map[string]string{
		Spearman:            "constant series",
		Pearson:             "constant series",
		CohenKappa:          "add \"pass\"",
		AlphaRatersInterval: "one rater",
		AlphaJudgeNominal:   "no paired case has a human pass/fail",
	} {
		if !strings.Contains(m.Undefined[name], want) {
			t.Errorf("undefined[%s] = %q, want it to say %q", name, m.Undefined[name], want)
		}
	}
	var table strings.Builder
	if err := WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "Spearman ρ") || !strings.Contains(table.String(), "constant series") {
		t.Errorf("table:\n%s", table.String())
	}
}

func TestLabelErrorsNameFileLineAndField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "labels.jsonl")
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", "{\"case_id\": \"c1\", \"metric\": \"m\", \"score\": 1}\nnope\n", path + ":2: not a JSON object"},
		{"missing case", `{"metric": "m", "score": 1}`, path + `:1: field "case_id": required`},
		{"empty metric", `{"case_id": "c1", "metric": " ", "score": 1}`, path + `:1: field "metric": empty`},
		{"score type", `{"case_id": "c1", "metric": "m", "score": "high"}`, path + `:1: field "score": want a number, got "high"`},
		{"pass type", `{"case_id": "c1", "metric": "m", "pass": "yes"}`, path + `:1: field "pass": want true or false, got "yes"`},
		{"neither", `{"case_id": "c1", "metric": "m", "rater": "a"}`, path + `:1: fields "score" and "pass": give at least one`},
		{"null score", `{"case_id": "c1", "metric": "m", "score": null}`, path + `:1: fields "score" and "pass": give at least one`},
		{"unknown key", `{"case_id": "c1", "metric": "m", "score": 1, "scroe": 2}`, path + `:1: field "scroe": unknown`},
		{"rater type", `{"case_id": "c1", "metric": "m", "score": 1, "rater": 7}`, path + `:1: field "rater": want a string, got 7`},
		{"twice", "{\"case_id\": \"c1\", \"metric\": \"m\", \"score\": 1}\n\n{\"case_id\": \"c1\", \"metric\": \"m\", \"pass\": true}\n",
			path + `:3: case_id "c1", metric "m", no rater: labelled twice (first at line 1)`},
		{"empty file", "# nothing\n", path + ": no labels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(path, []byte(tc.body), 0o644)
			_, err := ReadLabels(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	os.WriteFile(path, []byte("{\"case_id\": \"c1\", \"metric\": \"correctness\", \"score\": 1}\n{\"case_id\": \"zz\", \"metric\": \"corectness\", \"score\": 1}\n"), 0o644)
	labels, err := ReadLabels(path)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckLabels(path, labels, []string{"correctness", "tone"}, map[string]bool{"c1": true}, "cases.jsonl")
	for _, want := range []string{
		path + `:2: field "metric": unknown metric "corectness" (the config has correctness, tone)`,
		path + `:2: field "case_id": unknown case "zz" (not in cases.jsonl)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

func FuzzReadLabels(f *testing.F) {
	f.Add([]byte(`{"case_id": "c1", "metric": "m", "rater": "a", "score": 4, "pass": true}`))
	f.Add([]byte("{\"case_id\": \"c1\", \"metric\": \"m\", \"score\": 1e400}\n# c\n"))
	f.Add([]byte(`{"case_id": 1, "metric": [], "pass": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		labels, err := ParseLabels("labels.jsonl", data)
		if err != nil {
			return
		}
		for _, l := range labels {
			if l.CaseID == "" || l.Metric == "" || (l.Score == nil && l.Pass == nil) || l.Line < 1 {
				t.Fatalf("accepted an incomplete label %+v", l)
			}
			if l.Score != nil && (math.IsNaN(*l.Score) || math.IsInf(*l.Score, 0)) {
				t.Fatalf("accepted a non-finite score %+v", l)
			}
		}
	})
}

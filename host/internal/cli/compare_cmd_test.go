package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/compare"
	"github.com/agentanvil/anvil/host/internal/results"
)

// writeFakeRun writes an output directory whose results.jsonl gives the
// gated metric "correctness" (threshold 0.6) the scores, one case each.
func writeFakeRun(t *testing.T, dir, hash string, scores []float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, s := range scores {
		mr := results.MetricResult{Metric: "correctness", Kind: "geval", Gated: true, Threshold: 0.6, Status: results.StatusPassed}
		if s < 0 {
			mr.Status = results.StatusError
		} else {
			mr.Score = &s
			if s < 0.6 {
				mr.Status = results.StatusFailed
			}
		}
		line, _ := json.Marshal(results.CaseResult{CaseID: fmt.Sprintf("case-%d", i), ConfigHash: hash, Metrics: []results.MetricResult{mr}})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompareExitCodes(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	base := []float64{0.8, 0.7, 0.9, 0.6, 0.8, 0.7, 0.9, 0.5, 0.8, 0.7}
	writeFakeRun(t, filepath.Join(dir, "a"), "h", base)
	// −0.1 on average, 8 of 10 changed: p = 10/256 two-sided, 5/256 one-sided (exact).
	writeFakeRun(t, filepath.Join(dir, "worse"), "h", []float64{0.6, 0.7, 0.7, 0.5, 0.9, 0.5, 0.8, 0.3, 0.7, 0.7})
	// ±0.1 around the same mean: noise.
	writeFakeRun(t, filepath.Join(dir, "noise"), "h", []float64{0.9, 0.6, 0.9, 0.7, 0.7, 0.7, 0.8, 0.6, 0.8, 0.7})
	writeFakeRun(t, filepath.Join(dir, "other"), "h2", base)
	writeFakeRun(t, filepath.Join(dir, "errored"), "h", []float64{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1})

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     string
		reportJSON bool
	}{
		{"significantly worse", []string{"compare", "a", "worse"}, exitThreshold,
			[]string{"correctness", "-0.100", "0.0195", "WORSE", "pass→fail  case-5  0.700 → 0.500", "REGRESSED: correctness"}, "", false},
		{"noise", []string{"compare", "a", "noise"}, exitOK, []string{"no significant change", "NO REGRESSION"}, "", false},
		{"json", []string{"compare", "--json", "a", "worse"}, exitThreshold, nil, "", true},
		{"different configs", []string{"compare", "a", "other"}, exitUsage, nil, "config hash h in A, h2 in B", false},
		{"allowed config change", []string{"compare", "--allow-config-change", "a", "other"}, exitOK, []string{"config differs: config hash h in A, h2 in B"}, "", false},
		{"nothing shared", []string{"compare", "a", "errored"}, exitUnverified, []string{"UNVERIFIED"}, "no case scored in both runs", false},
		{"not a run", []string{"compare", "a", "missing"}, exitUsage, nil, "missing", false},
		{"one argument", []string{"compare", "a"}, exitUsage, nil, "accepts 2 arg(s)", false},
		{"bad level", []string{"compare", "--level", "95", "a", "worse"}, exitUsage, nil, "--level 95", false},
		{"report without a summary", []string{"compare", "--report", "a", "worse"}, exitUsage, nil, "--report: run worse has no summary.json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, dir, nil, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, r.stderr)
			}
			if tc.reportJSON {
				var rep compare.Report
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
					t.Fatalf("stdout is not the JSON report: %v\n%s", err, r.stdout)
				}
				m := rep.Metrics[0]
				if rep.Verdict != compare.VerdictRegressed || m.Test.PValue != 10.0/256 || m.PassToFail != 2 || m.Flips[0].CaseID != "case-5" {
					t.Errorf("report %+v", rep)
				}
			}
		})
	}
}

// TestCompareQuickstart runs README's compare commands: the quickstart's
// good answers, then its regressed answers, offline, and compare catches
// the regression (exit 1) with the cases that flipped.
func TestCompareQuickstart(t *testing.T) {
	dir := quickstart(t)
	if r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "-o", "runs/good", "--no-progress"); r.code != exitOK {
		t.Fatalf("good run: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBinary(t, dir, nil, "run", "-c", "anvil.yaml", "--input", "cases-regressed.jsonl", "-o", "runs/regressed", "--no-progress"); r.code != exitThreshold {
		t.Fatalf("regressed run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBinary(t, dir, nil, "compare", "--report", "runs/good", "runs/regressed")
	if r.code != exitThreshold {
		t.Fatalf("compare: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"REGRESSED: correctness, helpfulness", "pass→fail", "WORSE"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	// --report: compare.json in B, and B's page has the A vs B section
	// with the gated metrics worse and their flipped cases.
	var rep compare.Report
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "runs/regressed/compare.json")), &rep); err != nil || rep.Verdict != compare.VerdictRegressed {
		t.Fatalf("runs/regressed/compare.json: %v, verdict %q", err, rep.Verdict)
	}
	page := string(mustRead(t, filepath.Join(dir, "runs/regressed/report.html")))
	for _, want := range []string{`<section id="compare">`, `<a href="#compare">A vs B</a>`, `<span class="badge failed">REGRESSED</span> significantly worse in B: correctness, helpfulness`,
		`<span class="badge failed">pass→fail</span>`, `<span class="badge failed">WORSE</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("runs/regressed/report.html lacks %q", want)
		}
	}
	if strings.Contains(string(mustRead(t, filepath.Join(dir, "runs/good/report.html"))), `id="compare"`) {
		t.Error("compare --report wrote into run A's report")
	}
	// A run against itself: nothing changed.
	if r := runBinary(t, dir, nil, "compare", "runs/good", "runs/good"); r.code != exitOK || !strings.Contains(r.stdout, "NO REGRESSION") {
		t.Fatalf("compare with itself: exit %d\n%s", r.code, r.stdout)
	}
}

// TestCompareRefusesRunsOfAnotherJudge: two runs of one config hash whose
// summaries name different judge models (the model came from
// ANVIL_JUDGE_MODEL) are not comparable (exit 2, naming the models),
// unless --allow-config-change, which compares and says what differs.
func TestCompareRefusesRunsOfAnotherJudge(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	scores := []float64{0.8, 0.7, 0.9, 0.6, 0.8, 0.7, 0.9, 0.5, 0.8, 0.7}
	for name, model := range map[string]string{"mini": "gpt-4o-mini", "fake": "fake-judge"} {
		writeFakeRun(t, filepath.Join(dir, name), "h", scores)
		s := results.Summary{ConfigHash: "h", Cases: len(scores), Verdict: results.VerdictPassed,
			Judges: []results.JudgeReport{{Name: "default", Model: model, Source: "api"}}}
		b, _ := json.Marshal(s)
		if err := os.WriteFile(filepath.Join(dir, name, "summary.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runBinary(t, dir, nil, "compare", "mini", "fake")
	if r.code != exitUsage || !strings.Contains(r.stderr, "judge default: model gpt-4o-mini in A, fake-judge in B") || !strings.Contains(r.stderr, "--allow-config-change") {
		t.Errorf("compare of two judges: exit %d, want %d naming the models\nstdout:\n%s\nstderr:\n%s", r.code, exitUsage, r.stdout, r.stderr)
	}
	r = runBinary(t, dir, nil, "compare", "--allow-config-change", "mini", "fake")
	if r.code != exitOK || !strings.Contains(r.stdout, "config differs: judge default: model gpt-4o-mini in A, fake-judge in B") {
		t.Errorf("--allow-config-change: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/results"
)

// fakeMetric is one metric of a fabricated run: a score per case (NaN:
// the case errored on this metric).
type fakeMetric struct {
	name      string
	gated     bool
	threshold float64
	scores    []float64
}

// writeRun writes results.jsonl (and summary.json naming the judge's
// model) for cases c0, c1, … into a new directory.
func writeRun(t *testing.T, hash, model string, metrics ...fakeMetric) string {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for i := range metrics[0].scores {
		id := fmt.Sprintf("c%d", i)
		cr := results.CaseResult{CaseID: id, ConfigHash: hash, CaseDigest: identity.CaseDigest(&abi.TestCase{ID: id, Input: "question " + id})}
		for _, m := range metrics {
			mr := results.MetricResult{Metric: m.name, Kind: "geval", Gated: m.gated, Threshold: m.threshold}
			switch s := m.scores[i]; {
			case math.IsNaN(s):
				mr.Status = results.StatusError
			case s >= m.threshold:
				mr.Status, mr.Score = results.StatusPassed, &s
			default:
				mr.Status, mr.Score = results.StatusFailed, &s
			}
			cr.Metrics = append(cr.Metrics, mr)
		}
		b, err := json.Marshal(cr)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := results.Summary{RunID: "run-" + hash, ConfigHash: hash, Cases: len(lines), Verdict: results.VerdictPassed,
		Judges: []results.JudgeReport{{Name: "default", Model: model}}}
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustLoad(t *testing.T, dir string) *Run {
	t.Helper()
	r, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v (±%g)", what, got, want, tol)
	}
}

var (
	// baseline and regressed differ by −0.1 on average (8 of 10 cases
	// changed, one improved); SciPy's exact paired permutation test gives
	// p = 10/256 = 0.0390625 two-sided, 5/256 = 0.01953125 for "less".
	baseline  = []float64{0.8, 0.7, 0.9, 0.6, 0.8, 0.7, 0.9, 0.5, 0.8, 0.7}
	regressed = []float64{0.6, 0.7, 0.7, 0.5, 0.9, 0.5, 0.8, 0.3, 0.7, 0.7}
	// noisy differs from noiseBase by −0.1, +0.1, −0.2, … (mean −0.02):
	// p = 0.8203125 two-sided, 0.41015625 less, 0.75390625 greater.
	noiseBase = []float64{0.6, 0.63, 0.66, 0.69, 0.72, 0.75, 0.78, 0.81, 0.84, 0.87}
	noisy     = []float64{0.5, 0.73, 0.46, 0.79, 0.62, 0.75, 0.88, 0.71, 1.04, 0.67}
)

func TestSignificantRegressionIsWorse(t *testing.T) {
	t.Parallel()
	a := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, baseline})
	b := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, regressed})
	rep, err := Compare(mustLoad(t, a), mustLoad(t, b), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictRegressed || len(rep.Regressed) != 1 || rep.Regressed[0] != "correctness" {
		t.Fatalf("verdict %s, regressed %v; want regressed [correctness]", rep.Verdict, rep.Regressed)
	}
	m := rep.Metrics[0]
	if m.Verdict != MetricWorse || m.Shared != 10 || m.OnlyA != 0 || m.OnlyB != 0 {
		t.Errorf("metric %+v", m)
	}
	near(t, "difference", m.Difference.Estimate, -0.1, 1e-12)
	near(t, "p-value", m.Test.PValue, 0.0390625, 1e-12)
	near(t, "p-value less", m.Test.PValueLess, 0.01953125, 1e-12)
	near(t, "p-value greater", m.Test.PValueGreater, 0.99609375, 1e-12)
	if !m.Test.Exact || m.Test.NonZero != 8 {
		t.Errorf("test %+v: want exact over 8 non-zero differences", m.Test)
	}
	if !(m.Difference.High < 0 && m.Difference.Low < m.Difference.Estimate) {
		t.Errorf("interval %+v: want it wholly below zero around -0.1", m.Difference)
	}
	near(t, "mean A", *m.MeanA, 0.74, 1e-12)
	near(t, "mean B", *m.MeanB, 0.64, 1e-12)
	near(t, "pass rate A", *m.PassRateA, 0.9, 1e-12)
	near(t, "pass rate B", *m.PassRateB, 0.7, 1e-12)
	// c5 dropped 0.7 → 0.5, c3 0.6 → 0.5: pass→fail, largest drop first.
	if m.PassToFail != 2 || m.FailToPass != 0 || len(m.Flips) != 2 ||
		m.Flips[0].CaseID != "c5" || m.Flips[1].CaseID != "c3" || m.Flips[0].Direction != PassToFail {
		t.Errorf("flips %+v", m.Flips)
	}
}

func TestNoiseIsNoRegression(t *testing.T) {
	t.Parallel()
	a := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.7, noiseBase})
	b := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.7, noisy})
	rep, err := Compare(mustLoad(t, a), mustLoad(t, b), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics[0]
	if rep.Verdict != VerdictNoRegression || m.Verdict != MetricNoChange {
		t.Fatalf("verdict %s / %s, want no regression", rep.Verdict, m.Verdict)
	}
	near(t, "difference", m.Difference.Estimate, -0.02, 1e-12)
	near(t, "p-value", m.Test.PValue, 0.8203125, 1e-12)
	near(t, "p-value less", m.Test.PValueLess, 0.41015625, 1e-12)
	near(t, "p-value greater", m.Test.PValueGreater, 0.75390625, 1e-12)
	if !m.Difference.Contains(0) {
		t.Errorf("interval %+v excludes 0", m.Difference)
	}
	// Pass→fail listed before fail→pass, each by the size of the change:
	// c9 0.87 → 0.67 and c4 0.72 → 0.62 fail; c3 0.69 → 0.79 and c1
	// 0.63 → 0.73 pass (c3's rise is 0.1 plus rounding, so it comes first).
	var got []string
	for _, f := range m.Flips {
		got = append(got, f.CaseID+":"+f.Direction)
	}
	want := "c9:pass_to_fail c4:pass_to_fail c3:fail_to_pass c1:fail_to_pass"
	if strings.Join(got, " ") != want {
		t.Errorf("flips %v, want %s", got, want)
	}
}

func TestUngatedWorseAndErroredCases(t *testing.T) {
	t.Parallel()
	errored := append([]float64(nil), regressed...)
	errored[0] = math.NaN()
	a := writeRun(t, "h1", "m",
		fakeMetric{"correctness", true, 0.7, noiseBase},
		fakeMetric{"style", false, 0.6, baseline})
	b := writeRun(t, "h1", "m",
		fakeMetric{"correctness", true, 0.7, noisy},
		fakeMetric{"style", false, 0.6, errored})
	rep, err := Compare(mustLoad(t, a), mustLoad(t, b), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictNoRegression {
		t.Errorf("verdict %s: an informational metric must not regress the comparison", rep.Verdict)
	}
	style := rep.Metrics[1]
	if style.Name != "style" || style.Shared != 9 || style.OnlyA != 1 || style.OnlyB != 0 {
		t.Errorf("style %+v: want 9 shared, 1 only in A (errored in B)", style)
	}
	near(t, "style difference", style.Difference.Estimate, -0.8/9, 1e-12)
}

func TestGatedMetricWithNothingSharedIsUnverified(t *testing.T) {
	t.Parallel()
	none := make([]float64, len(baseline))
	for i := range none {
		none[i] = math.NaN()
	}
	a := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, baseline})
	b := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, none})
	rep, err := Compare(mustLoad(t, a), mustLoad(t, b), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictUnverified || rep.Metrics[0].Verdict != MetricUnverified || rep.Metrics[0].Difference != nil {
		t.Errorf("report %+v", rep)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("report does not encode: %v", err)
	}
}

func TestRunsOfDifferentEvaluationsAreNamed(t *testing.T) {
	t.Parallel()
	base := writeRun(t, "h1", "gpt-4o-mini", fakeMetric{"correctness", true, 0.6, baseline}, fakeMetric{"style", false, 0.5, baseline})
	for _, tc := range []struct {
		name string
		b    string
		want []string
	}{
		{"other metrics", writeRun(t, "h1", "gpt-4o-mini", fakeMetric{"correctness", true, 0.6, baseline}, fakeMetric{"tone", false, 0.5, baseline}),
			[]string{"metrics only in A: style", "metrics only in B: tone"}},
		{"threshold", writeRun(t, "h2", "gpt-4o-mini", fakeMetric{"correctness", true, 0.7, baseline}, fakeMetric{"style", false, 0.5, baseline}),
			[]string{"metric correctness: threshold 0.6 in A, 0.7 in B"}},
		{"judge model", writeRun(t, "h3", "gpt-4o", fakeMetric{"correctness", true, 0.6, baseline}, fakeMetric{"style", false, 0.5, baseline}),
			[]string{"judge default: model gpt-4o-mini in A, gpt-4o in B"}},
		{"params", writeRun(t, "h4", "gpt-4o-mini", fakeMetric{"correctness", true, 0.6, baseline}, fakeMetric{"style", false, 0.5, baseline}),
			[]string{"config hash h1 in A, h4 in B: the metrics' params, judge models or plugin digests differ"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := mustLoad(t, base), mustLoad(t, tc.b)
			_, err := Compare(a, b, Options{})
			var mm *MismatchError
			if !errors.As(err, &mm) {
				t.Fatalf("error %v, want a MismatchError", err)
			}
			if strings.Join(mm.Differences, "|") != strings.Join(tc.want, "|") {
				t.Errorf("differences %q, want %q", mm.Differences, tc.want)
			}
			rep, err := Compare(a, b, Options{AllowConfigChange: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.ConfigDifferences) != len(tc.want) || len(rep.Metrics) == 0 || rep.Metrics[0].Name != "correctness" {
				t.Errorf("with AllowConfigChange: %+v", rep)
			}
		})
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	results := filepath.Join(dir, "results.jsonl")
	for _, tc := range []struct{ name, body, want string }{
		{"duplicate case", `{"case_id":"a","config_hash":"h","metrics":[]}` + "\n" + `{"case_id":"a","config_hash":"h","metrics":[]}` + "\n",
			results + `:2: case_id: "a" appears twice`},
		{"two hashes", `{"case_id":"a","config_hash":"h","metrics":[]}` + "\n" + `{"case_id":"b","config_hash":"g","metrics":[]}` + "\n",
			results + `:2: config_hash: "g", but earlier lines have "h"`},
		{"not JSON", `{"case_id":"a","config_hash":"h","metrics":[]}` + "\n" + "garbage\n",
			results + ":2: "},
		{"no case id", `{"config_hash":"h","metrics":[]}` + "\n", results + ":1: case_id: empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.body)
			_, err := Load(dir, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := Load(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "no results.jsonl") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := Load(results, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
}

func TestCompareIsDeterministic(t *testing.T) {
	t.Parallel()
	a := mustLoad(t, writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, baseline}))
	b := mustLoad(t, writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, regressed}))
	first, _ := Compare(a, b, Options{Seed: 9})
	second, _ := Compare(a, b, Options{Seed: 9})
	j1, _ := json.Marshal(first)
	j2, _ := json.Marshal(second)
	if string(j1) != string(j2) {
		t.Errorf("same seed, different reports:\n%s\n%s", j1, j2)
	}
}

// Five cases that all dropped: two-sided the smallest possible p is 2/32,
// so a two-sided gate could never catch it; one-sided it is 1/32.
func TestFiveCasesAllWorseIsARegression(t *testing.T) {
	t.Parallel()
	a := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, []float64{0.8, 0.8, 0.8, 0.8, 0.8}})
	b := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, []float64{0.2, 0.2, 0.2, 0.2, 0.2}})
	rep, err := Compare(mustLoad(t, a), mustLoad(t, b), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics[0]
	if rep.Verdict != VerdictRegressed || m.Verdict != MetricWorse || m.Test.PValueLess != 1.0/32 || m.Test.PValue != 2.0/32 {
		t.Errorf("verdict %s, metric %s, test %+v", rep.Verdict, m.Verdict, m.Test)
	}
	// Four cannot be told from chance at 95%: 1/16 > 0.05.
	a = writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, []float64{0.8, 0.8, 0.8, 0.8}})
	b = writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, []float64{0.2, 0.2, 0.2, 0.2}})
	rep, err = Compare(mustLoad(t, a), mustLoad(t, b), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictNoRegression || rep.Metrics[0].Test.PValueLess != 1.0/16 {
		t.Errorf("four cases: verdict %s, test %+v", rep.Verdict, rep.Metrics[0].Test)
	}
}

func TestEmptyRunsAreUnverified(t *testing.T) {
	t.Parallel()
	empty := func() string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	rep, err := Compare(mustLoad(t, empty()), mustLoad(t, empty()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != VerdictUnverified || !slices.Contains(rep.Warnings, "no metric has results in both runs") {
		t.Errorf("two empty runs: verdict %s, warnings %v; want unverified", rep.Verdict, rep.Warnings)
	}
}

// withIdentity records id in dir's summary.json, as a run does.
func withIdentity(t *testing.T, dir string, id identity.Run) string {
	t.Helper()
	path := filepath.Join(dir, "summary.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s results.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s.Identity = &id
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// identityOf is a run's identity: judge default at baseURL answering
// with model, and G-Eval of source digest geval.
func identityOf(model, baseURL, geval string) identity.Run {
	return identity.New([]identity.Judge{{Name: "default", API: identity.API, Model: model, BaseURL: baseURL,
		Source: identity.SourceAPI, NumberTokens: "whole"}}, []identity.Kind{{Name: "geval", Version: "1.0.0", Digest: geval}})
}

// rewriteResults applies edit to every results line of dir.
func rewriteResults(t *testing.T, dir string, edit func(*results.CaseResult)) string {
	t.Helper()
	path := filepath.Join(dir, "results.jsonl")
	var lines []string
	err := results.Each(path, func(r *results.CaseResult) error {
		edit(r)
		b, err := json.Marshal(r)
		lines = append(lines, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRunsOfOtherJudgesAreNotComparable: two runs under one config hash
// whose judge model came from the environment — or whose endpoint,
// built-in G-Eval or dataset differ — are not compared ("no significant
// change" between two judges means nothing) unless the caller allows it,
// and then the differences are listed.
func TestRunsOfOtherJudgesAreNotComparable(t *testing.T) {
	t.Parallel()
	const openai, local = "https://api.openai.com/v1", "http://127.0.0.1:8080/v1"
	metric := fakeMetric{"correctness", true, 0.6, baseline}
	base := identityOf("gpt-4o-mini", openai, "sha256:g1")
	a := withIdentity(t, writeRun(t, "h1", "gpt-4o-mini", metric), base)
	for _, tc := range []struct {
		name string
		b    string
		want []string
	}{
		{"judge model from the environment, without identities", writeRun(t, "h1", "fake-judge", metric),
			[]string{"judge default: model gpt-4o-mini in A, fake-judge in B"}},
		{"judge model", withIdentity(t, writeRun(t, "h1", "fake-judge", metric), identityOf("fake-judge", openai, "sha256:g1")),
			[]string{"judge default model: A gpt-4o-mini, B fake-judge"}},
		{"judge endpoint", withIdentity(t, writeRun(t, "h1", "gpt-4o-mini", metric), identityOf("gpt-4o-mini", local, "sha256:g1")),
			[]string{"judge default base_url: A " + openai + ", B " + local}},
		{"G-Eval of other source", withIdentity(t, writeRun(t, "h1", "gpt-4o-mini", metric), identityOf("gpt-4o-mini", openai, "sha256:g2")),
			[]string{"built-in kind geval digest: A sha256:g1, B sha256:g2"}},
		{"cases asking other questions", rewriteResults(t, withIdentity(t, writeRun(t, "h1", "gpt-4o-mini", metric), base), func(r *results.CaseResult) {
			if r.CaseID == "c3" || r.CaseID == "c7" {
				r.CaseDigest = identity.CaseDigest(&abi.TestCase{ID: r.CaseID, Input: "another question"})
			}
		}), []string{"dataset: 2 shared case(s) ask or expect something else in B (input, expected output, context or expected tools): c3, c7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ra, rb := mustLoad(t, a), mustLoad(t, tc.b)
			if ra.ConfigHash != rb.ConfigHash {
				t.Fatal("the runs must share a config hash")
			}
			_, err := Compare(ra, rb, Options{})
			var mm *MismatchError
			if !errors.As(err, &mm) {
				t.Fatalf("Compare = %v, want a MismatchError", err)
			}
			if !slices.Equal(mm.Differences, tc.want) {
				t.Errorf("differences %q, want %q", mm.Differences, tc.want)
			}
			rep, err := Compare(ra, rb, Options{AllowConfigChange: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.ConfigDifferences, tc.want) || len(rep.Metrics) != 1 {
				t.Errorf("allowed: differences %q, %d metrics compared", rep.ConfigDifferences, len(rep.Metrics))
			}
			var table strings.Builder
			if err := WriteTable(&table, rep, 10); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), "config differs: "+tc.want[0]) {
				t.Errorf("the table does not warn of %q:\n%s", tc.want[0], table.String())
			}
		})
	}
}

// TestRunsWithoutIdentityAreComparedWithANote: runs made before
// identities were recorded are compared (their judge models agree), with
// warnings that the rest cannot be checked; runs of one identity get no
// such warning.
func TestRunsWithoutIdentityAreComparedWithANote(t *testing.T) {
	t.Parallel()
	metric := fakeMetric{"correctness", true, 0.6, baseline}
	old := rewriteResults(t, writeRun(t, "h1", "gpt-4o-mini", metric), func(r *results.CaseResult) { r.CaseDigest = "" })
	id := identityOf("gpt-4o-mini", "https://api.openai.com/v1", "sha256:g1")
	current := withIdentity(t, writeRun(t, "h1", "gpt-4o-mini", metric), id)
	rep, err := Compare(mustLoad(t, old), mustLoad(t, current), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 2 || !strings.Contains(rep.Warnings[0], "run "+old+" records no identity") || !strings.Contains(rep.Warnings[0], "cannot be checked") ||
		!strings.HasPrefix(rep.Warnings[1], "10 shared case(s) were written before results recorded what a case asks") {
		t.Errorf("warnings %q; want two saying run A's identity and questions cannot be checked", rep.Warnings)
	}
	same := withIdentity(t, writeRun(t, "h1", "gpt-4o-mini", metric), id)
	rep, err = Compare(mustLoad(t, current), mustLoad(t, same), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 0 || len(rep.ConfigDifferences) != 0 {
		t.Errorf("one identity: warnings %q, differences %q", rep.Warnings, rep.ConfigDifferences)
	}
}

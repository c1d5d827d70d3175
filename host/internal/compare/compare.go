package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

// Options are the statistics' settings.
type Options struct {
	// Level of the intervals, and 1 − Level the one-sided test's
	// significance level (0.95: 95% intervals, p < 0.05). 0 means
	// stats.DefaultLevel.
	Level float64
	// Resamples of the bootstrap, and of the permutation test above its
	// exact limit. 0 means stats.DefaultResamples.
	Resamples int
	// Seed of both (reproducible reports).
	Seed uint64
	// AllowConfigChange compares runs of different configurations (another
	// judge model, other params): the shared metrics are compared and the
	// differences are listed in Report.ConfigDifferences instead of being
	// an error.
	AllowConfigChange bool
}

// Verdicts of a metric and of a comparison.
const (
	MetricWorse      = "worse"
	MetricBetter     = "better"
	MetricNoChange   = "no_significant_change"
	MetricUnverified = "unverified"

	VerdictRegressed    = "regressed"
	VerdictNoRegression = "no_regression"
	VerdictUnverified   = "unverified"
)

// Flip directions.
const (
	PassToFail = "pass_to_fail"
	FailToPass = "fail_to_pass"
)

// Report is the comparison of run B against run A (compare --json, and the
// document the report's compare view reads).
type Report struct {
	A RunInfo `json:"a"`
	B RunInfo `json:"b"`
	// Level, Resamples and Seed are the statistics' settings.
	Level     float64 `json:"level"`
	Resamples int     `json:"resamples"`
	Seed      uint64  `json:"seed"`
	// ConfigDifferences lists what differs between the runs'
	// configurations (only with AllowConfigChange; otherwise they are an
	// error).
	ConfigDifferences []string `json:"config_differences,omitempty"`
	// Metrics are compared in run A's order.
	Metrics []MetricComparison `json:"metrics"`
	// Verdict: "regressed" (a gated metric is significantly worse),
	// "unverified" (a gated metric has no case both runs scored, or no
	// metric was compared at all) or "no_regression".
	Verdict string `json:"verdict"`
	// Regressed names the gated metrics that are significantly worse.
	Regressed []string `json:"regressed,omitempty"`
	// Warnings are about the inputs (an incomplete run).
	Warnings []string `json:"warnings,omitempty"`
}

// RunInfo identifies a compared run.
type RunInfo struct {
	Dir        string `json:"dir"`
	RunID      string `json:"run_id,omitempty"`
	ConfigHash string `json:"config_hash"`
	Cases      int    `json:"cases"`
	// Verdict is the run's own verdict from summary.json, when it has one.
	Verdict string `json:"verdict,omitempty"`
}

// MetricComparison is one metric, B against A.
type MetricComparison struct {
	MetricInfo
	// Shared is the number of cases both runs scored: the pairs.
	Shared int `json:"shared"`
	// OnlyA and OnlyB count cases one run scored and the other did not
	// (absent there, or an error or skip).
	OnlyA int `json:"only_a"`
	OnlyB int `json:"only_b"`
	// MeanA and MeanB are the means over the shared cases; PassRateA and
	// PassRateB the shares passing there. Absent when nothing is shared.
	MeanA     *float64 `json:"mean_a,omitempty"`
	MeanB     *float64 `json:"mean_b,omitempty"`
	PassRateA *float64 `json:"pass_rate_a,omitempty"`
	PassRateB *float64 `json:"pass_rate_b,omitempty"`
	// Difference is the mean of B − A over the shared cases with its
	// paired bootstrap interval.
	Difference *stats.CI `json:"difference,omitempty"`
	// Test is the paired permutation test of the same difference; its
	// one-sided p_value_less decides "worse", p_value_greater "better".
	Test *stats.TestResult `json:"test,omitempty"`
	// Verdict: worse, better, no_significant_change or unverified.
	Verdict          string `json:"verdict"`
	UnverifiedReason string `json:"unverified_reason,omitempty"`
	PassToFail       int    `json:"pass_to_fail"`
	FailToPass       int    `json:"fail_to_pass"`
	// Flips are the shared cases whose pass/fail changed: pass→fail first,
	// each group by the size of the score change, largest first.
	Flips []Flip `json:"flips"`
	// VerdictAgreement is the share of shared cases whose pass/fail is
	// the same in both runs, with its Wilson interval.
	VerdictAgreement   *float64  `json:"verdict_agreement,omitempty"`
	VerdictAgreementCI *stats.CI `json:"verdict_agreement_ci,omitempty"`
	// ByDecider is, when one run judged the metric with a judge cascade,
	// the agreement on the shared cases each of its judges decided: how
	// far the cheaper judges' decisions stand in for the last judge's
	// (compared against a run of that judge alone).
	ByDecider []DeciderAgreement `json:"by_decider,omitempty"`
}

// DeciderAgreement is the verdict agreement on the cases one judge of a
// cascade decided.
type DeciderAgreement struct {
	Judge string `json:"judge"`
	// Run is the run whose cascade it is ("A" or "B").
	Run   string  `json:"run"`
	Cases int     `json:"cases"`
	Agree int     `json:"agree"`
	Share float64 `json:"share"`
}

// Flip is a case whose pass/fail changed from A to B.
type Flip struct {
	CaseID    string  `json:"case_id"`
	Direction string  `json:"direction"`
	ScoreA    float64 `json:"score_a"`
	ScoreB    float64 `json:"score_b"`
}

// MismatchError says why two runs cannot be compared.
type MismatchError struct {
	A, B        string
	Differences []string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("runs %s and %s are not of the same evaluation:\n  %s\n(compare runs of one config, or pass --allow-config-change to compare the shared metrics anyway)",
		e.A, e.B, strings.Join(e.Differences, "\n  "))
}

// Compare compares run b against run a.
func Compare(a, b *Run, opts Options) (*Report, error) {
	opts.Level = cmp.Or(opts.Level, stats.DefaultLevel)
	opts.Resamples = cmp.Or(opts.Resamples, stats.DefaultResamples)
	if !(opts.Level > 0 && opts.Level < 1) {
		return nil, fmt.Errorf("level %v: want a fraction between 0 and 1 (0.95 for 95%%)", opts.Level)
	}
	if opts.Resamples < 1 {
		return nil, fmt.Errorf("resamples %d: want at least 1", opts.Resamples)
	}
	diffs, shared, unchecked := differences(a, b)
	if len(diffs) > 0 && !opts.AllowConfigChange {
		return nil, &MismatchError{A: a.Dir, B: b.Dir, Differences: diffs}
	}
	rep := &Report{
		A: info(a), B: info(b),
		Level: opts.Level, Resamples: opts.Resamples, Seed: opts.Seed,
		ConfigDifferences: diffs,
		Verdict:           VerdictNoRegression,
		Warnings:          unchecked,
	}
	for _, r := range []*Run{a, b} {
		if r.Summary != nil && r.Summary.Verdict == results.VerdictIncomplete {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("run %s is incomplete: only the cases it finished are compared", r.Dir))
		}
	}
	unverified := false
	for _, name := range shared {
		mc, err := compareMetric(a, b, name, opts)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", name, err)
		}
		rep.Metrics = append(rep.Metrics, mc)
		if !mc.Gated {
			continue
		}
		switch mc.Verdict {
		case MetricWorse:
			rep.Regressed = append(rep.Regressed, name)
		case MetricUnverified:
			unverified = true
		}
	}
	if len(rep.Metrics) == 0 {
		// Nothing was compared, so nothing was verified.
		rep.Warnings = append(rep.Warnings, "no metric has results in both runs")
		unverified = true
	}
	switch {
	case len(rep.Regressed) > 0:
		rep.Verdict = VerdictRegressed
	case unverified:
		rep.Verdict = VerdictUnverified
	}
	return rep, nil
}

func info(r *Run) RunInfo {
	ri := RunInfo{Dir: r.Dir, ConfigHash: r.ConfigHash, Cases: len(r.Cases)}
	if r.Summary != nil {
		ri.RunID, ri.Verdict = r.Summary.RunID, r.Summary.Verdict
	}
	return ri
}

// differences lists what differs between the runs' configurations and
// identities (judges as resolved, built-in kinds, dataset), the metrics
// both have (in a's order), and what could not be checked.
func differences(a, b *Run) (diffs, shared, unchecked []string) {
	var onlyA, onlyB []string
	for _, ma := range a.Metrics {
		mb, ok := b.metric(ma.Name)
		if !ok {
			onlyA = append(onlyA, ma.Name)
			continue
		}
		shared = append(shared, ma.Name)
		if ma.Kind != mb.Kind {
			diffs = append(diffs, fmt.Sprintf("metric %s: kind %s in A, %s in B", ma.Name, ma.Kind, mb.Kind))
		}
		if ma.Threshold != mb.Threshold {
			diffs = append(diffs, fmt.Sprintf("metric %s: threshold %g in A, %g in B", ma.Name, ma.Threshold, mb.Threshold))
		}
		if ma.Gated != mb.Gated {
			diffs = append(diffs, fmt.Sprintf("metric %s: gate %v in A, %v in B", ma.Name, ma.Gated, mb.Gated))
		}
		if ma.Cascade != mb.Cascade {
			in, other := "A", "B"
			if mb.Cascade {
				in, other = "B", "A"
			}
			diffs = append(diffs, fmt.Sprintf("metric %s: judged by a judge cascade in %s, not in %s (with --allow-config-change, compare reports the cascade's verdict agreement with the other run's judge)", ma.Name, in, other))
		}
	}
	for _, mb := range b.Metrics {
		if _, ok := a.metric(mb.Name); !ok {
			onlyB = append(onlyB, mb.Name)
		}
	}
	if len(onlyA) > 0 {
		diffs = append(diffs, "metrics only in A: "+strings.Join(onlyA, ", "))
	}
	if len(onlyB) > 0 {
		diffs = append(diffs, "metrics only in B: "+strings.Join(onlyB, ", "))
	}
	// Judged under one config hash is not judged by one judge: a model or
	// endpoint from the environment is not in the hash.
	ids, unchecked := identityDifferences(a, b)
	diffs = append(diffs, ids...)
	cases, caseNote := caseDifferences(a, b)
	diffs = append(diffs, cases...)
	unchecked = append(unchecked, caseNote...)
	if a.ConfigHash != b.ConfigHash && len(diffs) == 0 {
		diffs = append(diffs, fmt.Sprintf("config hash %s in A, %s in B: the metrics' params, judge models or plugin digests differ", a.ConfigHash, b.ConfigHash))
	}
	return diffs, shared, unchecked
}

// identityDifferences compares the runs' identities — every judge as it
// was called, the built-in kinds' source digests, the dataset's digest —
// when both summaries record one. A run without (made before identities
// were recorded, or without summary.json) is compared on the judge
// models its summary names, if any, and what cannot be checked is said.
func identityDifferences(a, b *Run) (diffs, unchecked []string) {
	ia, ib := runIdentity(a), runIdentity(b)
	if ia != nil && ib != nil {
		return identity.Diff(*ia, *ib, "A", "B"), nil
	}
	for _, r := range []*Run{a, b} {
		if runIdentity(r) == nil {
			unchecked = append(unchecked, fmt.Sprintf("run %s records no identity (made before identities were recorded, or no summary.json): whether its judges' endpoints and settings, built-in kinds and dataset are the other run's cannot be checked", r.Dir))
		}
	}
	return judgeDifferences(a, b), unchecked
}

// caseDifferences names the cases both runs have that ask or expect
// something else in B (input, expected output, context or expected
// tools; the answers under test may differ): pairing them would compare
// two questions. Cases whose results do not record what they asked are
// counted as unchecked.
func caseDifferences(a, b *Run) (diffs, unchecked []string) {
	var differ []string
	blind := 0
	for _, id := range a.Cases {
		db, shared := b.caseDigests[id]
		if !shared {
			continue
		}
		switch da := a.caseDigests[id]; {
		case da == "" || db == "":
			blind++
		case da != db:
			differ = append(differ, id)
		}
	}
	if len(differ) > 0 {
		const shown = 5
		list := strings.Join(differ[:min(len(differ), shown)], ", ")
		if len(differ) > shown {
			list += fmt.Sprintf(" and %d more", len(differ)-shown)
		}
		diffs = append(diffs, fmt.Sprintf("dataset: %d shared case(s) ask or expect something else in B (input, expected output, context or expected tools): %s", len(differ), list))
	}
	if blind > 0 {
		unchecked = append(unchecked, fmt.Sprintf("%d shared case(s) were written before results recorded what a case asks: that A and B asked them the same cannot be checked", blind))
	}
	return diffs, unchecked
}

func runIdentity(r *Run) *identity.Run {
	if r.Summary == nil {
		return nil
	}
	return r.Summary.Identity
}

// judgeDifferences compares the judges' models the summaries name.
func judgeDifferences(a, b *Run) []string {
	if a.Summary == nil || b.Summary == nil {
		return nil
	}
	var diffs []string
	for _, ja := range a.Summary.Judges {
		for _, jb := range b.Summary.Judges {
			if ja.Name == jb.Name && ja.Model != jb.Model {
				diffs = append(diffs, fmt.Sprintf("judge %s: model %s in A, %s in B", ja.Name, ja.Model, jb.Model))
			}
		}
	}
	return diffs
}

func compareMetric(a, b *Run, name string, opts Options) (MetricComparison, error) {
	mi, _ := a.metric(name)
	mc := MetricComparison{MetricInfo: mi, Flips: []Flip{}}
	var scoresA, scoresB []float64
	var passA, passB int
	for _, id := range a.Cases {
		sa, pa, okA := a.scored(id, name)
		sb, pb, okB := b.scored(id, name)
		switch {
		case okA && okB:
			scoresA, scoresB = append(scoresA, sa), append(scoresB, sb)
			if pa {
				passA++
			}
			if pb {
				passB++
			}
			switch {
			case pa && !pb:
				mc.Flips = append(mc.Flips, Flip{CaseID: id, Direction: PassToFail, ScoreA: sa, ScoreB: sb})
				mc.PassToFail++
			case !pa && pb:
				mc.Flips = append(mc.Flips, Flip{CaseID: id, Direction: FailToPass, ScoreA: sa, ScoreB: sb})
				mc.FailToPass++
			}
		case okA:
			mc.OnlyA++
		}
	}
	for _, id := range b.Cases {
		_, _, okA := a.scored(id, name)
		if _, _, okB := b.scored(id, name); okB && !okA {
			mc.OnlyB++
		}
	}
	slices.SortStableFunc(mc.Flips, func(x, y Flip) int {
		if x.Direction != y.Direction {
			if x.Direction == PassToFail {
				return -1
			}
			return 1
		}
		return cmp.Compare(abs(y.ScoreB-y.ScoreA), abs(x.ScoreB-x.ScoreA))
	})
	mc.Shared = len(scoresA)
	if mc.Shared > 0 {
		agree := mc.Shared - mc.PassToFail - mc.FailToPass
		mc.VerdictAgreement = ptr(float64(agree) / float64(mc.Shared))
		if ci, err := stats.WilsonCI(agree, mc.Shared, opts.Level); err == nil {
			mc.VerdictAgreementCI = &ci
		}
		mc.ByDecider = byDecider(a, b, name)
	}
	if mc.Shared == 0 {
		mc.Verdict = MetricUnverified
		mc.UnverifiedReason = fmt.Sprintf("no case scored in both runs (%d only in A, %d only in B)", mc.OnlyA, mc.OnlyB)
		return mc, nil
	}
	n := float64(mc.Shared)
	mc.MeanA, mc.MeanB = ptr(stats.Mean(scoresA)), ptr(stats.Mean(scoresB))
	mc.PassRateA, mc.PassRateB = ptr(float64(passA)/n), ptr(float64(passB)/n)
	diff, err := stats.PairedMeanDiffCI(scoresA, scoresB, opts.Level, opts.Resamples, opts.Seed)
	if err != nil {
		return mc, err
	}
	test, err := stats.PairedPermutationTest(scoresA, scoresB, opts.Resamples, opts.Seed)
	if err != nil {
		return mc, err
	}
	mc.Difference, mc.Test = &diff, &test
	alpha := 1 - opts.Level
	switch {
	case test.PValueLess < alpha:
		mc.Verdict = MetricWorse
	case test.PValueGreater < alpha:
		mc.Verdict = MetricBetter
	default:
		mc.Verdict = MetricNoChange
	}
	return mc, nil
}

// byDecider is the verdict agreement per judge of the cascade of the run
// that has one (nil when neither or both have).
func byDecider(a, b *Run, name string) []DeciderAgreement {
	ma, _ := a.metric(name)
	mb, _ := b.metric(name)
	if ma.Cascade == mb.Cascade {
		return nil
	}
	cascade, label := a, "A"
	if mb.Cascade {
		cascade, label = b, "B"
	}
	at := map[string]int{}
	var out []DeciderAgreement
	for _, id := range a.Cases {
		_, pa, okA := a.scored(id, name)
		_, pb, okB := b.scored(id, name)
		if !okA || !okB {
			continue
		}
		judge := cascade.results[id][name].DecidedBy
		i, seen := at[judge]
		if !seen {
			i = len(out)
			at[judge] = i
			out = append(out, DeciderAgreement{Judge: judge, Run: label})
		}
		out[i].Cases++
		if pa == pb {
			out[i].Agree++
		}
	}
	for i := range out {
		out[i].Share = results.Round4(float64(out[i].Agree) / float64(out[i].Cases))
	}
	slices.SortFunc(out, func(x, y DeciderAgreement) int { return cmp.Compare(x.Judge, y.Judge) })
	return out
}

func abs(x float64) float64 { return max(x, -x) }

func ptr(v float64) *float64 { return &v }

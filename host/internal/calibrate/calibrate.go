package calibrate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/agentanvil/anvil/host/internal/stats"
)

// Names of the agreement statistics, the keys of MetricCalibration's
// Agreement and Undefined.
const (
	// Spearman, Kendall and Pearson correlate the judge's score with the
	// mean of the raters' scores, over the cases with both.
	Spearman = "spearman"
	Kendall  = "kendall_tau_b"
	Pearson  = "pearson"
	// CohenKappa is the judge's pass/fail against the raters' majority
	// pass/fail (a tied majority leaves the case out).
	CohenKappa = "cohen_kappa"
	// AlphaRatersInterval and AlphaRatersNominal are Krippendorff's α among
	// the human raters alone — on their scores (interval) and on their
	// pass/fail (nominal), over every labelled case — the agreement the
	// judge can be expected to reach at best. Only with two raters or more.
	AlphaRatersInterval = "alpha_raters_interval"
	AlphaRatersNominal  = "alpha_raters_nominal"
	// AlphaJudgeNominal is Krippendorff's α on pass/fail with the judge as
	// one more rater beside the humans, over the cases the judge scored.
	// (Scores are not pooled with the judge's: the humans' scale is not the
	// judge's.)
	AlphaJudgeNominal = "alpha_judge_and_raters_nominal"
)

// Options are the statistics' settings.
type Options struct {
	// Level of the intervals; 0 means stats.DefaultLevel.
	Level float64
	// Resamples of the bootstrap; 0 means stats.DefaultResamples.
	Resamples int
	Seed      uint64
}

// Report is calibration.json: per labelled metric, the agreement of its
// judge with the human labels.
type Report struct {
	// Labels is the labels file; Results the run directory whose results
	// were paired with it.
	Labels     string  `json:"labels"`
	Results    string  `json:"results"`
	ConfigHash string  `json:"config_hash"`
	Level      float64 `json:"level"`
	Resamples  int     `json:"resamples"`
	Seed       uint64  `json:"seed"`
	// Metrics are the labelled metrics in the run's order.
	Metrics []MetricCalibration `json:"metrics"`
	// Unlabelled are the run's metrics without a label.
	Unlabelled []string `json:"unlabelled,omitempty"`
}

// MetricCalibration is one metric's agreement with its labels.
type MetricCalibration struct {
	Metric    string  `json:"metric"`
	Kind      string  `json:"kind"`
	Threshold float64 `json:"threshold"`
	// Labels is the number of labels; Raters the distinct raters;
	// LabelledCases the cases with at least one label.
	Labels        int `json:"labels"`
	Raters        int `json:"raters"`
	LabelledCases int `json:"labelled_cases"`
	// Paired is the labelled cases the judge scored; Unscored lists the
	// others (the judge errored or skipped them, or the run lacks them).
	Paired   int      `json:"paired"`
	Unscored []string `json:"unscored,omitempty"`
	// Points are the paired cases, for a scatter plot.
	Points []Point `json:"points"`
	// Agreement maps a statistic's name (Spearman, Kendall, …) to its
	// estimate and bootstrap interval over cases.
	Agreement map[string]stats.CI `json:"agreement"`
	// Undefined maps a statistic absent from Agreement to why.
	Undefined map[string]string `json:"undefined,omitempty"`
}

// Point is one paired case.
type Point struct {
	CaseID string `json:"case_id"`
	// Judge is the judge's score as in results.jsonl; JudgePass its verdict.
	Judge     float64 `json:"judge"`
	JudgePass bool    `json:"judge_pass"`
	// Human is the mean of the raters' scores (absent when none gave one);
	// HumanPass the raters' majority pass/fail (absent when none gave one,
	// or on a tie).
	Human     *float64 `json:"human,omitempty"`
	HumanPass *bool    `json:"human_pass,omitempty"`
	// Ratings is the number of labels of this case.
	Ratings int `json:"ratings"`
}

// Calibrate pairs labels (already checked with CheckLabels) with the
// results and computes every metric's agreement. labelsPath is recorded in
// the report.
func Calibrate(labelsPath string, labels []Label, res *Results, opts Options) (*Report, error) {
	opts.Level = cmp.Or(opts.Level, stats.DefaultLevel)
	opts.Resamples = cmp.Or(opts.Resamples, stats.DefaultResamples)
	rep := &Report{Labels: labelsPath, Results: res.Dir, ConfigHash: res.ConfigHash,
		Level: opts.Level, Resamples: opts.Resamples, Seed: opts.Seed}
	byMetric := map[string][]Label{}
	for _, l := range labels {
		byMetric[l.Metric] = append(byMetric[l.Metric], l)
	}
	for metric := range byMetric {
		if !slices.Contains(res.Metrics, metric) {
			return nil, fmt.Errorf("metric %q is labelled but has no results in %s (was the run made with this config?)", metric, res.Dir)
		}
	}
	for _, metric := range res.Metrics {
		ls := byMetric[metric]
		if len(ls) == 0 {
			rep.Unlabelled = append(rep.Unlabelled, metric)
			continue
		}
		mc, err := calibrateMetric(metric, ls, res, opts)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", metric, err)
		}
		rep.Metrics = append(rep.Metrics, mc)
	}
	return rep, nil
}

// caseLabels gathers one case's labels of one metric.
type caseLabels struct {
	id     string
	scores []float64
	passes []bool
}

func calibrateMetric(metric string, labels []Label, res *Results, opts Options) (MetricCalibration, error) {
	info := res.info[metric]
	mc := MetricCalibration{Metric: metric, Kind: info.Kind, Threshold: info.Threshold, Labels: len(labels),
		Points: []Point{}, Agreement: map[string]stats.CI{}, Undefined: map[string]string{}}
	var cases []*caseLabels
	byCase := map[string]*caseLabels{}
	raters := map[string]bool{}
	for _, l := range labels {
		raters[l.Rater] = true
		c := byCase[l.CaseID]
		if c == nil {
			c = &caseLabels{id: l.CaseID}
			byCase[l.CaseID] = c
			cases = append(cases, c)
		}
		if l.Score != nil {
			c.scores = append(c.scores, *l.Score)
		}
		if l.Pass != nil {
			c.passes = append(c.passes, *l.Pass)
		}
	}
	mc.Raters, mc.LabelledCases = len(raters), len(cases)

	for _, c := range cases {
		j, ok := res.scored[metric][c.id]
		if !ok {
			mc.Unscored = append(mc.Unscored, c.id)
			continue
		}
		p := Point{CaseID: c.id, Judge: j.score, JudgePass: j.pass, Ratings: max(len(c.scores), len(c.passes))}
		if len(c.scores) > 0 {
			p.Human = ptr(stats.Mean(c.scores))
		}
		if pass, ok := majority(c.passes); ok {
			p.HumanPass = &pass
		}
		mc.Points = append(mc.Points, p)
	}
	mc.Paired = len(mc.Points)

	record := func(name string, ci stats.CI, err error) error {
		switch {
		case errors.Is(err, stats.ErrUndefined):
			mc.Undefined[name] = err.Error()
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		default:
			mc.Agreement[name] = ci
		}
		return nil
	}

	// Correlations: the judge's score against the raters' mean score.
	var judge, human []float64
	for _, p := range mc.Points {
		if p.Human != nil {
			judge, human = append(judge, p.Judge), append(human, *p.Human)
		}
	}
	for _, c := range []struct {
		name string
		fn   func(x, y []float64) (float64, error)
	}{{Spearman, stats.Spearman}, {Kendall, stats.KendallTauB}, {Pearson, stats.Pearson}} {
		if len(judge) == 0 {
			mc.Undefined[c.name] = "no paired case has a human score"
			continue
		}
		ci, err := stats.PairedCI(judge, human, c.fn, opts.Level, opts.Resamples, opts.Seed)
		if err := record(c.name, ci, err); err != nil {
			return mc, err
		}
	}

	// Cohen's κ: the judge's pass/fail against the raters' majority.
	var judgePass, humanPass []bool
	for _, p := range mc.Points {
		if p.HumanPass != nil {
			judgePass, humanPass = append(judgePass, p.JudgePass), append(humanPass, *p.HumanPass)
		}
	}
	if len(judgePass) == 0 {
		mc.Undefined[CohenKappa] = "no paired case has a human pass/fail (add \"pass\" to the labels)"
	} else {
		a, b := make([]bool, len(judgePass)), make([]bool, len(judgePass))
		ci, err := stats.Bootstrap(len(judgePass), func(idx []int) (float64, error) {
			a, b = a[:len(idx)], b[:len(idx)]
			for i, k := range idx {
				a[i], b[i] = judgePass[k], humanPass[k]
			}
			return stats.CohenKappa(a, b)
		}, opts.Level, opts.Resamples, opts.Seed)
		if err := record(CohenKappa, ci, err); err != nil {
			return mc, err
		}
	}

	// Krippendorff's α among the raters, and on pass/fail with the judge.
	alpha := func(name string, units [][]float64, level stats.Measurement) error {
		ci, err := stats.Bootstrap(len(units), func(idx []int) (float64, error) {
			sample := make([][]float64, len(idx))
			for i, k := range idx {
				sample[i] = units[k]
			}
			return stats.KrippendorffAlpha(sample, level)
		}, opts.Level, opts.Resamples, opts.Seed)
		return record(name, ci, err)
	}
	if mc.Raters >= 2 {
		var scoreUnits, passUnits [][]float64
		for _, c := range cases {
			scoreUnits = append(scoreUnits, c.scores)
			passUnits = append(passUnits, bools(c.passes))
		}
		if err := alpha(AlphaRatersInterval, scoreUnits, stats.Interval); err != nil {
			return mc, err
		}
		if err := alpha(AlphaRatersNominal, passUnits, stats.Nominal); err != nil {
			return mc, err
		}
	} else {
		reason := "one rater: agreement among raters needs two or more (give each label a \"rater\")"
		mc.Undefined[AlphaRatersInterval], mc.Undefined[AlphaRatersNominal] = reason, reason
	}
	var judgeUnits [][]float64
	for _, c := range cases {
		j, ok := res.scored[metric][c.id]
		if !ok || len(c.passes) == 0 {
			continue
		}
		judgeUnits = append(judgeUnits, append(bools(c.passes), bools([]bool{j.pass})...))
	}
	if len(judgeUnits) == 0 {
		mc.Undefined[AlphaJudgeNominal] = "no paired case has a human pass/fail"
	} else if err := alpha(AlphaJudgeNominal, judgeUnits, stats.Nominal); err != nil {
		return mc, err
	}
	if len(mc.Undefined) == 0 {
		mc.Undefined = nil
	}
	return mc, nil
}

// majority is the majority of passes; false on a tie or none.
func majority(passes []bool) (pass, ok bool) {
	yes := 0
	for _, p := range passes {
		if p {
			yes++
		}
	}
	no := len(passes) - yes
	if yes == no {
		return false, false
	}
	return yes > no, true
}

func bools(bs []bool) []float64 {
	out := make([]float64, len(bs))
	for i, b := range bs {
		if b {
			out[i] = 1
		}
	}
	return out
}

func ptr(v float64) *float64 { return &v }

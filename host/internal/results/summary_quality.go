package results

import (
	"hash/fnv"
	"math"
	"sort"

	"github.com/agentanvil/anvil/host/internal/stats"
)

// Quality is what a metric's summary says about how far its numbers can
// be trusted: the spread of repeated scorings (samples: N), a panel's
// agreement, and the score histogram the report draws. It is computed from
// the per-case results as a Summarizer is given them, keeping a few
// numbers per case (never the cases).
type Quality struct {
	// MeanCI is the mean score with its 95% percentile bootstrap interval
	// over cases (seeded by the metric's key, so a summary is
	// reproducible); PassRateCI the pass rate with its 95% Wilson interval.
	MeanCI     *stats.CI `json:"mean_ci,omitempty"`
	PassRateCI *stats.CI `json:"pass_rate_ci,omitempty"`
	// FlipShareCI is FlipShare with its 95% Wilson interval.
	FlipShareCI *stats.CI `json:"flip_share_ci,omitempty"`
	// Sampled counts the cases scored more than once by one judge.
	Sampled int `json:"sampled,omitempty"`
	// FlipShare is the share of sampled cases whose samples disagree on
	// pass/fail: cases whose verdict another run could change.
	FlipShare *float64 `json:"flip_share,omitempty"`
	// MeanSampleSD is the mean over sampled cases of their samples'
	// standard deviation; MaxSampleSD the largest.
	MeanSampleSD *float64 `json:"mean_sample_sd,omitempty"`
	MaxSampleSD  *float64 `json:"max_sample_sd,omitempty"`
	// FlippedCases lists up to 20 cases whose samples flipped.
	FlippedCases []string `json:"flipped_cases,omitempty"`
	// Histogram counts scores in ten equal bins over [0, 1] (a score of 1
	// falls in the last).
	Histogram []int `json:"histogram,omitempty"`
	// Panel is a panel's inter-judge agreement.
	Panel *PanelAgreement `json:"panel,omitempty"`
	// DAGSamples is, for a dag metric scored more than once per case, how
	// often its walks took different paths and each node's verdicts.
	DAGSamples *DAGSampleSummary `json:"dag_samples,omitempty"`
}

// PanelAgreement is how a panel's judges agree over the cases every one
// of them scored.
type PanelAgreement struct {
	Judges    []string `json:"judges"`
	Aggregate string   `json:"aggregate"`
	// Cases every judge scored.
	Cases int `json:"cases"`
	// MeanAbsDiff is the mean, over those cases and every pair of judges,
	// of the absolute difference of their scores (0: identical, 1: opposite).
	MeanAbsDiff *float64 `json:"mean_abs_diff,omitempty"`
	// VerdictAgreement is the share of those cases on which every judge
	// gave the same verdict.
	VerdictAgreement *float64 `json:"verdict_agreement,omitempty"`
	// JudgeMeans is each judge's mean score, in Judges order.
	JudgeMeans []float64 `json:"judge_means,omitempty"`
	// Pairs is the mean absolute difference per pair of judges.
	Pairs []PairAgreement `json:"pairs,omitempty"`
	// Alpha is Krippendorff's α of the judges' scores (interval level) and
	// AlphaVerdicts of their verdicts (nominal): 1 is full agreement, 0
	// what chance gives. Absent when undefined (every score equal).
	Alpha         *float64 `json:"krippendorff_alpha,omitempty"`
	AlphaVerdicts *float64 `json:"krippendorff_alpha_verdicts,omitempty"`
}

// PairAgreement is one pair of a panel's judges.
type PairAgreement struct {
	A           string  `json:"a"`
	B           string  `json:"b"`
	MeanAbsDiff float64 `json:"mean_abs_diff"`
}

// qualityAcc gathers what Quality needs as results are added.
type qualityAcc struct {
	sds       []float64
	flips     int
	judges    []string
	aggregate string
	// panelScores holds, per case every judge scored, the judges' scores
	// and verdicts in judges order.
	panelScores [][]float64
	panelPass   [][]bool
	dag         dagSampleAcc
}

func (ms *MetricSummary) addQuality(caseID string, r *MetricResult) {
	q := &ms.quality
	q.dag.add(caseID, r.DAGSpread)
	addSpread := func(sp *Spread) {
		if sp == nil || len(sp.Scores) < 2 {
			return
		}
		q.sds = append(q.sds, sp.StdDev)
		if sp.Flipped {
			q.flips++
			if len(ms.FlippedCases) < 20 {
				ms.FlippedCases = append(ms.FlippedCases, caseID)
			}
		}
	}
	if r.Panel == nil {
		addSpread(r.Spread)
		return
	}
	// A case counts as flipped once however many of its judges' samples
	// flipped; its spread is the widest judge's.
	var widest *Spread
	for i := range r.Panel {
		if sp := r.Panel[i].Spread; sp != nil && (widest == nil || sp.StdDev > widest.StdDev || sp.Flipped && !widest.Flipped) {
			widest = sp
		}
	}
	addSpread(widest)
	if q.judges == nil {
		for _, v := range r.Panel {
			q.judges = append(q.judges, v.Judge)
		}
		q.aggregate = r.Aggregate
	}
	if len(r.Panel) != len(q.judges) {
		return
	}
	scores := make([]float64, len(r.Panel))
	pass := make([]bool, len(r.Panel))
	for i, v := range r.Panel {
		if v.Score == nil || v.Judge != q.judges[i] {
			return
		}
		scores[i], pass[i] = *v.Score, v.Status == StatusPassed
	}
	q.panelScores = append(q.panelScores, scores)
	q.panelPass = append(q.panelPass, pass)
}

// finishQuality fills Quality from the accumulator and the metric's
// scores (sorted).
func (ms *MetricSummary) finishQuality(scores []float64) {
	q := &ms.quality
	seed := metricSeed(ms.Metric)
	if ci, err := stats.MeanCI(scores, stats.DefaultLevel, stats.DefaultResamples, seed); err == nil {
		ms.MeanCI = rounded(ci)
	}
	if ci, err := stats.WilsonCI(ms.Passed, ms.Passed+ms.Failed, stats.DefaultLevel); err == nil {
		ms.PassRateCI = rounded(ci)
	}
	if len(scores) > 0 {
		ms.Histogram = make([]int, 10)
		for _, s := range scores {
			ms.Histogram[min(int(s*10), 9)]++
		}
	}
	if n := len(q.sds); n > 0 {
		ms.Sampled = n
		share := Round4(float64(q.flips) / float64(n))
		sum, top := 0.0, 0.0
		for _, sd := range q.sds {
			sum += sd
			top = math.Max(top, sd)
		}
		meanSD, maxSD := Round4(sum/float64(n)), Round4(top)
		ms.FlipShare, ms.MeanSampleSD, ms.MaxSampleSD = &share, &meanSD, &maxSD
		if ci, err := stats.WilsonCI(q.flips, n, stats.DefaultLevel); err == nil {
			ms.FlipShareCI = rounded(ci)
		}
	}
	if q.judges != nil {
		ms.Panel = panelAgreement(q)
	}
	ms.DAGSamples = q.dag.finish()
	ms.quality = qualityAcc{}
}

func panelAgreement(q *qualityAcc) *PanelAgreement {
	k := len(q.judges)
	pa := &PanelAgreement{Judges: q.judges, Aggregate: q.aggregate, Cases: len(q.panelScores)}
	if pa.Cases == 0 {
		return pa
	}
	pa.JudgeMeans = make([]float64, k)
	pairSum := make(map[[2]int]float64)
	agree := 0
	for c, scores := range q.panelScores {
		same := true
		for i := range k {
			pa.JudgeMeans[i] += scores[i]
			if q.panelPass[c][i] != q.panelPass[c][0] {
				same = false
			}
			for j := i + 1; j < k; j++ {
				pairSum[[2]int{i, j}] += math.Abs(scores[i] - scores[j])
			}
		}
		if same {
			agree++
		}
	}
	n := float64(pa.Cases)
	for i := range pa.JudgeMeans {
		pa.JudgeMeans[i] = Round4(pa.JudgeMeans[i] / n)
	}
	keys := make([][2]int, 0, len(pairSum))
	for p := range pairSum {
		keys = append(keys, p)
	}
	sort.Slice(keys, func(a, b int) bool {
		return keys[a][0] < keys[b][0] || keys[a][0] == keys[b][0] && keys[a][1] < keys[b][1]
	})
	total := 0.0
	for _, p := range keys {
		d := pairSum[p] / n
		total += d
		pa.Pairs = append(pa.Pairs, PairAgreement{A: q.judges[p[0]], B: q.judges[p[1]], MeanAbsDiff: Round4(d)})
	}
	if len(keys) > 0 {
		mad := Round4(total / float64(len(keys)))
		pa.MeanAbsDiff = &mad
	}
	va := Round4(float64(agree) / n)
	pa.VerdictAgreement = &va
	verdicts := make([][]float64, len(q.panelPass))
	for c, pass := range q.panelPass {
		verdicts[c] = make([]float64, len(pass))
		for i, p := range pass {
			if p {
				verdicts[c][i] = 1
			}
		}
	}
	pa.Alpha = alpha(q.panelScores, stats.Interval)
	pa.AlphaVerdicts = alpha(verdicts, stats.Nominal)
	return pa
}

// alpha is Krippendorff's α, nil where it is undefined (no disagreement
// is possible: every value equal).
func alpha(units [][]float64, level stats.Measurement) *float64 {
	a, err := stats.KrippendorffAlpha(units, level)
	if err != nil {
		return nil
	}
	a = Round4(a)
	return &a
}

// metricSeed seeds a metric's bootstrap from its key: the same results
// give the same interval on every run and machine.
func metricSeed(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

func rounded(ci stats.CI) *stats.CI {
	ci.Estimate, ci.Low, ci.High = Round4(ci.Estimate), Round4(ci.Low), Round4(ci.High)
	return &ci
}

package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
)

// Summary is summary.json: per metric, and what the run as a whole means
// for a CI gate.
type Summary struct {
	ConfigHash string           `json:"config_hash"`
	Cases      int              `json:"cases"`
	Metrics    []MetricSummary  `json:"metrics"`
	Judge      JudgeUsage       `json:"judge"`
	Prepare    []PrepareSummary `json:"prepare,omitempty"`
	// Passed is false when a gated metric's pass rate is below 1 — any
	// gated case scored under its threshold.
	Passed bool `json:"passed"`
	// Errors counts judge and plugin errors; they are not threshold failures.
	JudgeErrors  int `json:"judge_errors"`
	PluginErrors int `json:"plugin_errors"`
	MetricErrors int `json:"metric_errors"`
}

// PrepareSummary records a metric's once-per-run work (G-Eval's steps).
type PrepareSummary struct {
	Metric  string          `json:"metric"`
	Details json.RawMessage `json:"details,omitempty"`
	Error   string          `json:"error,omitempty"`
	Usage   JudgeUsage      `json:"usage"`
}

// MetricSummary aggregates one metric over the run.
type MetricSummary struct {
	Metric     string         `json:"metric"`
	Kind       string         `json:"kind"`
	Gated      bool           `json:"gated"`
	Threshold  float64        `json:"threshold"`
	N          int            `json:"n"`
	Scored     int            `json:"scored"`
	Passed     int            `json:"passed"`
	Failed     int            `json:"failed"`
	Errors     int            `json:"errors"`
	Skipped    int            `json:"skipped"`
	Mean       *float64       `json:"mean"`
	P50        *float64       `json:"p50"`
	PassRate   *float64       `json:"pass_rate"`
	ScoreModes map[string]int `json:"score_modes,omitempty"`
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	Judge      JudgeUsage     `json:"judge"`
	// SkipReason is why the first skipped case was skipped (a missing
	// field, or no judge configured).
	SkipReason string `json:"skip_reason,omitempty"`
	// FailedCases lists up to 20 failing case ids, for the table and JUnit.
	FailedCases []string `json:"failed_cases,omitempty"`

	scores []float64
}

// summarize reads results.jsonl back — so a resumed run's summary covers
// every case, not only those of the last process — keeping only scores.
func summarize(dir, hash string, order []string, prep []PrepareSummary) (*Summary, error) {
	s := &Summary{ConfigHash: hash, Prepare: prep, Passed: true}
	by := map[string]*MetricSummary{}
	for _, k := range order {
		by[k] = &MetricSummary{Metric: k, ScoreModes: map[string]int{}, ErrorKinds: map[string]int{}}
	}
	err := EachResult(filepath.Join(dir, "results.jsonl"), func(cr *CaseResult) error {
		s.Cases++
		for _, mr := range cr.Metrics {
			mr.caseID = cr.CaseID
			ms := by[mr.Metric]
			if ms == nil {
				ms = &MetricSummary{Metric: mr.Metric, ScoreModes: map[string]int{}, ErrorKinds: map[string]int{}}
				by[mr.Metric] = ms
				order = append(order, mr.Metric)
			}
			ms.add(mr)
			s.Judge.merge(mr.Usage)
			switch mr.ErrorClass {
			case "judge":
				s.JudgeErrors++
			case "plugin":
				s.PluginErrors++
			case "metric":
				s.MetricErrors++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	for _, p := range prep {
		s.Judge.merge(p.Usage)
	}
	s.Metrics = s.Metrics[:0]
	for _, k := range order {
		ms := by[k]
		ms.finish()
		if ms.Gated && ms.GateFailed() {
			s.Passed = false
		}
		s.Metrics = append(s.Metrics, *ms)
	}
	return s, nil
}

// GateFailed reports whether the metric fails as a gate: a case scored
// below its threshold, or nothing scored at all but errors (a gate that
// verified nothing must not pass). Whether the metric is gated is Gated.
func (ms *MetricSummary) GateFailed() bool {
	return ms.Failed > 0 || (ms.Scored == 0 && ms.Errors > 0)
}

func (ms *MetricSummary) add(r MetricResult) {
	ms.N++
	ms.Kind, ms.Gated, ms.Threshold = r.Kind, r.Gated, r.Threshold
	ms.Judge.merge(r.Usage)
	switch r.Status {
	case StatusPassed:
		ms.Passed++
	case StatusFailed:
		ms.Failed++
		if len(ms.FailedCases) < 20 {
			ms.FailedCases = append(ms.FailedCases, r.caseID)
		}
	case StatusError:
		ms.Errors++
		if r.Error != nil {
			ms.ErrorKinds[string(r.Error.Code)]++
		}
	case StatusSkipped:
		ms.Skipped++
		if ms.SkipReason == "" {
			ms.SkipReason = r.Reason
		}
	}
	if r.Score != nil {
		ms.Scored++
		ms.scores = append(ms.scores, *r.Score)
		if r.ScoreMode != "" {
			ms.ScoreModes[r.ScoreMode]++
		}
	}
}

func (ms *MetricSummary) finish() {
	if len(ms.ScoreModes) == 0 {
		ms.ScoreModes = nil
	}
	if len(ms.ErrorKinds) == 0 {
		ms.ErrorKinds = nil
	}
	if n := len(ms.scores); n > 0 {
		sort.Float64s(ms.scores)
		sum := 0.0
		for _, v := range ms.scores {
			sum += v
		}
		mean := round4(sum / float64(n))
		p50 := ms.scores[n/2]
		if n%2 == 0 {
			p50 = (ms.scores[n/2-1] + ms.scores[n/2]) / 2
		}
		p50 = round4(p50)
		ms.Mean, ms.P50 = &mean, &p50
	}
	if graded := ms.Passed + ms.Failed; graded > 0 {
		rate := round4(float64(ms.Passed) / float64(graded))
		ms.PassRate = &rate
	}
	ms.scores = nil
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/identity"
)

// Summary is summary.json: per metric, and what the run as a whole means
// for a CI gate.
type Summary struct {
	// RunID identifies the process that wrote this summary; StartedAt and
	// FinishedAt bound it (a resumed run's summary covers earlier
	// processes' cases too).
	RunID      string    `json:"run_id"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	ConfigHash string    `json:"config_hash"`
	Cases      int       `json:"cases"`
	// Verdict is the run's outcome for a gate: "passed", "failed" (a
	// gated metric has a case below its threshold), "unverified" (a gated
	// metric verified nothing, or too little: see Unverified) or
	// "incomplete" (the run stopped early: see Incomplete).
	Verdict string `json:"verdict"`
	// Passed is Verdict == "passed".
	Passed bool `json:"passed"`
	// Unverified says why the gate could not verify the run.
	Unverified []string `json:"unverified,omitempty"`
	// Incomplete is set when the run stopped before the dataset's end.
	Incomplete *Incomplete      `json:"incomplete,omitempty"`
	Metrics    []MetricSummary  `json:"metrics"`
	Judge      JudgeUsage       `json:"judge"`
	Judges     []JudgeReport    `json:"judges,omitempty"`
	Prepare    []PrepareSummary `json:"prepare,omitempty"`
	Cache      *CacheReport     `json:"cache,omitempty"`
	Resume     *ResumeReport    `json:"resume,omitempty"`
	FieldGaps  []FieldGap       `json:"field_gaps,omitempty"`
	// Graphs outline each dag metric's graph, so a report draws it and the
	// path each case took without the config.
	Graphs []dag.Outline `json:"graphs,omitempty"`
	// Errors counts judge and plugin errors; they are not threshold failures.
	JudgeErrors  int `json:"judge_errors"`
	PluginErrors int `json:"plugin_errors"`
	MetricErrors int `json:"metric_errors"`

	// Identity is what the scores depend on beyond the config: every
	// judge as resolved (model and endpoint from the environment
	// included) and the built-in kinds' source digests. Every result in
	// results.jsonl was evaluated under it (or written before identities
	// were recorded); compare checks it.
	Identity *identity.Run `json:"identity,omitempty"`
}

// Verdicts of a run, and of a gated metric ("informational" for gate: false).
const (
	VerdictPassed        = "passed"
	VerdictFailed        = "failed"
	VerdictUnverified    = "unverified"
	VerdictIncomplete    = "incomplete"
	VerdictInformational = "informational"
)

// Incomplete describes a run that stopped early.
type Incomplete struct {
	Reason string `json:"reason"`
	// Resume is the command that finishes the run.
	Resume string `json:"resume"`
	// UnwrittenJudge is the judge work of cases the run stopped before
	// writing (they run again on resume); Summary.Judge includes it, the
	// metrics' own figures do not.
	UnwrittenJudge *JudgeUsage `json:"unwritten_judge,omitempty"`
}

// JudgeReport says where a judge's answers came from.
type JudgeReport struct {
	Name  string `json:"name"`
	Model string `json:"model"`
	// Source is "api" (called over HTTP), "recording" (replayed from a
	// recorded session; no model was called) or "unavailable".
	Source string `json:"source"`
	// Note is the operator-facing line about it (what the recording is, how
	// to configure the judge).
	Note string `json:"note,omitempty"`
}

// CacheReport is the state of the judge cache over the run.
type CacheReport struct {
	// Error is set when the store could not be used at all.
	Error string `json:"error,omitempty"`
	// Unreadable counts cache reads that failed or entries that did not
	// decode (each treated as a miss and called again).
	Unreadable int64 `json:"unreadable,omitempty"`
}

// decide sets the run's verdict: incomplete if it stopped early; failed if a
// gated metric has a case below its threshold (a regression that more
// retries will not fix, so it outranks unverified); unverified if a gated
// metric verified nothing or errored above its max_error_rate, or the
// dataset had no cases; passed otherwise.
func (s *Summary) decide(incomplete *Incomplete) {
	s.Incomplete = incomplete
	failed := false
	s.Unverified = nil
	if s.Cases == 0 && incomplete == nil {
		s.Unverified = append(s.Unverified, "the dataset has no cases: nothing was verified")
	}
	for _, m := range s.Metrics {
		switch m.Verdict {
		case VerdictFailed:
			failed = true
		case VerdictUnverified:
			s.Unverified = append(s.Unverified, fmt.Sprintf("metric %s: %s", m.Metric, m.UnverifiedReason))
		}
	}
	switch {
	case incomplete != nil:
		s.Verdict = VerdictIncomplete
	case failed:
		s.Verdict = VerdictFailed
	case len(s.Unverified) > 0:
		s.Verdict = VerdictUnverified
	default:
		s.Verdict = VerdictPassed
	}
	s.Passed = s.Verdict == VerdictPassed
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
	Metric    string  `json:"metric"`
	Kind      string  `json:"kind"`
	Gated     bool    `json:"gated"`
	Threshold float64 `json:"threshold"`
	// Verdict is the metric's gate outcome: passed, failed (a case below
	// the threshold), unverified (nothing scored, or errors above
	// MaxErrorRate) or informational (gate: false).
	Verdict          string         `json:"verdict"`
	UnverifiedReason string         `json:"unverified_reason,omitempty"`
	MaxErrorRate     float64        `json:"max_error_rate"`
	ErrorRate        float64        `json:"error_rate"`
	N                int            `json:"n"`
	Scored           int            `json:"scored"`
	Passed           int            `json:"passed"`
	Failed           int            `json:"failed"`
	Errors           int            `json:"errors"`
	Skipped          int            `json:"skipped"`
	Mean             *float64       `json:"mean"`
	P50              *float64       `json:"p50"`
	PassRate         *float64       `json:"pass_rate"`
	ScoreModes       map[string]int `json:"score_modes,omitempty"`
	ErrorKinds       map[string]int `json:"error_kinds,omitempty"`
	Judge            JudgeUsage     `json:"judge"`
	// SkipReason is why the first skipped case was skipped (a missing
	// field, or no judge configured).
	SkipReason string `json:"skip_reason,omitempty"`
	// FailedCases lists up to 20 failing case ids, for the table and JUnit.
	FailedCases []string `json:"failed_cases,omitempty"`
	// Quality is the spread, agreement and histogram (summary_quality.go).
	Quality

	scores  []float64
	quality qualityAcc
}

// gatePolicy is what the gate needs to know of each configured metric
// beyond its results.
type gatePolicy map[string]float64 // metric key → max_error_rate

func (e *Engine) gatePolicy() gatePolicy {
	p := gatePolicy{}
	for _, m := range e.all {
		if m.cfg.MaxErrorRate != nil {
			p[m.key] = *m.cfg.MaxErrorRate
		}
	}
	return p
}

// summarize reads results.jsonl back — so a resumed run's summary covers
// every case, not only those of the last process — keeping only scores.
func summarize(dir, hash string, order []string, prep []PrepareSummary, policy gatePolicy) (*Summary, error) {
	s := &Summary{ConfigHash: hash, Prepare: prep}
	by := map[string]*MetricSummary{}
	for _, k := range order {
		by[k] = &MetricSummary{Metric: k, ScoreModes: map[string]int{}, ErrorKinds: map[string]int{}}
	}
	err := EachOutcome(filepath.Join(dir, "results.jsonl"), func(cr *CaseResult) error {
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
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	for _, p := range prep {
		s.Judge.merge(p.Usage)
	}
	s.Metrics = s.Metrics[:0]
	for _, k := range order {
		ms := by[k]
		ms.MaxErrorRate = policy[k]
		ms.finish()
		s.Metrics = append(s.Metrics, *ms)
	}
	s.decide(nil)
	return s, nil
}

// GateFailed reports whether the metric fails as a gate: a case scored
// below its threshold, or nothing verified (see Verdict). Whether the
// metric is gated is Gated.
func (ms *MetricSummary) GateFailed() bool {
	return ms.Verdict == VerdictFailed || ms.Verdict == VerdictUnverified
}

// gate decides the metric's verdict from its counts.
func (ms *MetricSummary) gate() {
	ms.UnverifiedReason = ""
	if ms.N > 0 {
		ms.ErrorRate = round4(float64(ms.Errors) / float64(ms.N))
	}
	switch {
	case !ms.Gated:
		ms.Verdict = VerdictInformational
	case ms.Failed > 0:
		ms.Verdict = VerdictFailed
	case ms.Scored == 0:
		ms.Verdict = VerdictUnverified
		ms.UnverifiedReason = ms.nothingScored()
	case float64(ms.Errors) > ms.MaxErrorRate*float64(ms.N):
		ms.Verdict = VerdictUnverified
		ms.UnverifiedReason = fmt.Sprintf("errors on %d of %d cases (%.1f%%) exceed max_error_rate %g", ms.Errors, ms.N, 100*float64(ms.Errors)/float64(ms.N), ms.MaxErrorRate)
	default:
		ms.Verdict = VerdictPassed
	}
}

func (ms *MetricSummary) nothingScored() string {
	switch {
	case ms.N == 0:
		return "no case was evaluated"
	case ms.Skipped == ms.N:
		return fmt.Sprintf("scored no case: all %d skipped (%s)", ms.N, ms.SkipReason)
	default:
		return fmt.Sprintf("scored no case: %d errors, %d skipped", ms.Errors, ms.Skipped)
	}
}

func (ms *MetricSummary) add(r MetricResult) {
	ms.N++
	ms.Kind, ms.Gated = r.Kind, r.Gated
	if ms.N == 1 || r.Threshold > ms.Threshold {
		ms.Threshold = r.Threshold
	}
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
			ms.SkipReason = printable(r.Reason)
		}
	}
	ms.addQuality(r)
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
	ms.finishQuality(ms.scores)
	ms.scores = nil
	ms.gate()
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

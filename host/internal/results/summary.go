package results

import (
	"encoding/json"
	"fmt"
	"math"
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
	Incomplete *Incomplete     `json:"incomplete,omitempty"`
	Metrics    []MetricSummary `json:"metrics"`
	Judge      JudgeUsage      `json:"judge"`
	// CachedInputShare is the share of the run's input tokens the
	// providers served from their prompt caches (Judge's
	// cached_input_tokens over input_tokens); absent when no input was
	// counted.
	CachedInputShare *float64 `json:"cached_input_share,omitempty"`
	// Unpriced says, per judge whose calls have no USD (its model is not
	// in the price table and its config sets no price:), why: the run's
	// and its metrics' USD are then lower bounds.
	Unpriced  []string         `json:"unpriced,omitempty"`
	Judges    []JudgeReport    `json:"judges,omitempty"`
	Prepare   []PrepareSummary `json:"prepare,omitempty"`
	Cache     *CacheReport     `json:"cache,omitempty"`
	Resume    *ResumeReport    `json:"resume,omitempty"`
	FieldGaps []FieldGap       `json:"field_gaps,omitempty"`
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
	// Price is where the judge's USD comes from.
	Price *JudgePrice `json:"price,omitempty"`
}

// JudgePrice is a judge's price: USD per million tokens and where it
// comes from.
type JudgePrice struct {
	// Source is "table" (the built-in price table's row), "config" (the
	// judge's price:) or "none" (no price: no USD is counted; Why says
	// why).
	Source                string  `json:"source"`
	InputPerMillion       float64 `json:"input_per_million,omitzero"`
	CachedInputPerMillion float64 `json:"cached_input_per_million,omitzero"`
	CacheWritePerMillion  float64 `json:"cache_write_per_million,omitzero"`
	OutputPerMillion      float64 `json:"output_per_million,omitzero"`
	// TableModel, URL and AsOf are the table row's model, the page its
	// price is read from and the date it is known to hold.
	TableModel string `json:"table_model,omitempty"`
	URL        string `json:"url,omitempty"`
	AsOf       string `json:"as_of,omitempty"`
	Why        string `json:"why,omitempty"`
}

// CacheReport is the state of the judge cache over the run.
type CacheReport struct {
	// Error is set when the store could not be used at all.
	Error string `json:"error,omitempty"`
	// Unreadable counts cache reads that failed or entries that did not
	// decode (each treated as a miss and called again).
	Unreadable int64 `json:"unreadable,omitempty"`
}

// Decide sets the run's verdict: incomplete if it stopped early; failed if a
// gated metric has a case below its threshold (a regression that more
// retries will not fix, so it outranks unverified); unverified if a gated
// metric verified nothing or errored above its max_error_rate, or the
// dataset had no cases; passed otherwise.
//
// It also derives the run's cached-input share from its judge totals, as
// they stand once the caller has merged all the run's work into them.
func (s *Summary) Decide(incomplete *Incomplete) {
	s.CachedInputShare = s.Judge.CachedShare()
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

// FieldGap is a field some cases lack that a metric needs: those cases
// will be skipped for that metric.
type FieldGap struct {
	Metric string   `json:"metric"`
	Field  string   `json:"field"`
	Cases  int      `json:"cases"`
	First  []string `json:"first"` // up to 5 case ids
}

func (g FieldGap) String() string {
	return fmt.Sprintf("metric %s: %d case(s) have no %s (e.g. %v); they will be skipped for it", g.Metric, g.Cases, g.Field, g.First)
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
	// Judge is the metric's judge work: its cases' and its once-per-run
	// prepare's (G-Eval's steps), as estimate's row counts it.
	Judge JudgeUsage `json:"judge"`
	// USDPerVerifiedCase is Judge's USD over the cases scored (verified:
	// passed or failed against the threshold, or scored ungated); absent
	// when nothing was scored or some calls had no price (Unpriced).
	USDPerVerifiedCase *float64 `json:"usd_per_verified_case,omitempty"`
	// CachedInputShare is the share of Judge's input tokens served from
	// the providers' prompt caches; absent when no input was counted.
	CachedInputShare *float64 `json:"cached_input_share,omitempty"`
	// SkipReason is why the first skipped case was skipped (a missing
	// field, or no judge configured).
	SkipReason string `json:"skip_reason,omitempty"`
	// FailedCases lists up to 20 failing case ids, for the table and JUnit.
	FailedCases []string `json:"failed_cases,omitempty"`
	// Cascade is a judge cascade's escalations and cost; AdaptiveSamples
	// how many scorings adaptive samples took (summary_cascade.go).
	Cascade         *CascadeSummary         `json:"cascade,omitempty"`
	AdaptiveSamples *AdaptiveSamplesSummary `json:"adaptive_samples,omitempty"`
	// Quality is the spread, agreement and histogram (summary_quality.go).
	Quality

	scores  []float64
	quality qualityAcc
}

// Summarizer builds a run's Summary from its cases as they are added, in
// results order: a Sink. It keeps a few numbers per case and metric — the
// score, a sampled or panel metric's spread, a dag metric's walk counts —
// never the cases themselves.
type Summarizer struct {
	cases int
	order []string // metric keys: the configuration's, then others as seen
	by    map[string]*MetricSummary
	judge JudgeUsage
	// judgeErrors, pluginErrors and metricErrors count results by error class.
	judgeErrors, pluginErrors, metricErrors int
}

// Configured is a metric as the configuration defines it: what its row
// says before, or without, any result.
type Configured struct {
	Metric, Kind string
	Threshold    float64
	Gated        bool
}

// NewSummarizer returns a Summarizer whose summary lists the metrics
// configured first, in that order, whether or not a case has them: a
// metric no case reached (a run stopped before its first result) still
// shows its kind, threshold and gate, not zeros.
func NewSummarizer(configured []Configured) *Summarizer {
	z := &Summarizer{by: map[string]*MetricSummary{}}
	for _, c := range configured {
		ms := z.metric(c.Metric)
		ms.Kind, ms.Threshold, ms.Gated = c.Kind, c.Threshold, c.Gated
	}
	return z
}

func (z *Summarizer) metric(key string) *MetricSummary {
	ms := z.by[key]
	if ms == nil {
		ms = &MetricSummary{Metric: key, ScoreModes: map[string]int{}, ErrorKinds: map[string]int{}}
		z.by[key] = ms
		z.order = append(z.order, key)
	}
	return ms
}

// Add counts one case.
func (z *Summarizer) Add(cr *CaseResult) {
	z.cases++
	for i := range cr.Metrics {
		mr := &cr.Metrics[i]
		z.metric(mr.Metric).add(cr.CaseID, mr)
		z.judge.Merge(mr.Usage)
		switch mr.ErrorClass {
		case "judge":
			z.judgeErrors++
		case "plugin":
			z.pluginErrors++
		case "metric":
			z.metricErrors++
		}
	}
}

// Summary is the summary of the cases added: under config hash hash,
// with the once-per-run work prep (its judge usage counted in the total),
// each metric gated by its max_error_rate in maxErrorRate (0 when absent),
// and a verdict decided as for a complete run. The run's own fields (its
// id, times, judges) are the caller's. It ends the Summarizer: it takes no
// case after.
func (z *Summarizer) Summary(hash string, prep []PrepareSummary, maxErrorRate map[string]float64) *Summary {
	s := &Summary{ConfigHash: hash, Prepare: prep, Cases: z.cases, Judge: z.judge,
		JudgeErrors: z.judgeErrors, PluginErrors: z.pluginErrors, MetricErrors: z.metricErrors}
	for _, p := range prep {
		s.Judge.Merge(p.Usage)
		// A metric's row counts its once-per-run work (G-Eval's steps)
		// with its cases' calls, as estimate's row does, so the rows
		// of run and estimate are the same figures.
		if ms := z.by[p.Metric]; ms != nil {
			ms.Judge.Merge(p.Usage)
		}
	}
	s.Metrics = make([]MetricSummary, 0, len(z.order))
	for _, k := range z.order {
		ms := z.by[k]
		ms.MaxErrorRate = maxErrorRate[k]
		ms.finish()
		s.Metrics = append(s.Metrics, *ms)
	}
	s.Decide(nil)
	return s
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
		ms.ErrorRate = Round4(float64(ms.Errors) / float64(ms.N))
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

func (ms *MetricSummary) add(caseID string, r *MetricResult) {
	ms.N++
	ms.Kind, ms.Gated = r.Kind, r.Gated
	if ms.N == 1 || r.Threshold > ms.Threshold {
		ms.Threshold = r.Threshold
	}
	ms.Judge.Merge(r.Usage)
	switch r.Status {
	case StatusPassed:
		ms.Passed++
	case StatusFailed:
		ms.Failed++
		if len(ms.FailedCases) < 20 {
			ms.FailedCases = append(ms.FailedCases, caseID)
		}
	case StatusError:
		ms.Errors++
		if r.Error != nil {
			ms.ErrorKinds[string(r.Error.Code)]++
		}
	case StatusSkipped:
		ms.Skipped++
		if ms.SkipReason == "" {
			ms.SkipReason = Printable(r.Reason)
		}
	}
	ms.addQuality(caseID, r)
	ms.addCascade(r)
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
		mean := Round4(sum / float64(n))
		p50 := ms.scores[n/2]
		if n%2 == 0 {
			p50 = (ms.scores[n/2-1] + ms.scores[n/2]) / 2
		}
		p50 = Round4(p50)
		ms.Mean, ms.P50 = &mean, &p50
	}
	if graded := ms.Passed + ms.Failed; graded > 0 {
		rate := Round4(float64(ms.Passed) / float64(graded))
		ms.PassRate = &rate
	}
	ms.finishQuality(ms.scores)
	ms.finishCascade()
	ms.scores = nil
	ms.gate()
	ms.CachedInputShare = ms.Judge.CachedShare()
	ms.USDPerVerifiedCase = nil
	if ms.Scored > 0 && ms.Judge.Unpriced == 0 {
		v := RoundUSD(ms.Judge.USD / float64(ms.Scored))
		ms.USDPerVerifiedCase = &v
	}
}

// RoundUSD rounds a derived USD figure to a millionth of a dollar: four
// decimals would round a cheap judge's cost per case to zero.
func RoundUSD(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// Round4 rounds v to four decimals, as every figure a result or a summary
// derives is rounded.
func Round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// WriteSummary writes s as dir/summary.json, synced, replacing the file
// whole (a reader never sees half of it).
func WriteSummary(dir string, s *Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary.json: %w", err)
	}
	if err := writeFileSync(filepath.Join(dir, "summary.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("write summary.json: %w", err)
	}
	return nil
}

package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentanvil/anvil/abi"
)

// Status of one metric on one case.
const (
	StatusPassed  = "passed"
	StatusFailed  = "failed"  // scored below threshold
	StatusError   = "error"   // metric, plugin or judge error: no score
	StatusSkipped = "skipped" // a needed field or judge is missing
)

// CaseResult is one line of results.jsonl: every metric on one case.
type CaseResult struct {
	CaseID     string `json:"case_id"`
	ConfigHash string `json:"config_hash"`
	// Identity is the digest of the judges and kinds that evaluated the
	// case (identity.Run): a run writes results of one identity only.
	// Empty in results written before it was recorded.
	Identity string `json:"identity,omitempty"`
	// CaseDigest is identity.CaseDigest of the case: what it asks and
	// expects, not the answer under test (compare pairs a case of two
	// runs only when they agree).
	CaseDigest string `json:"case_digest,omitempty"`
	// Worker names the cluster worker that evaluated the case; empty in
	// a local run.
	Worker  string         `json:"worker,omitempty"`
	Metrics []MetricResult `json:"metrics"`
	// Case is the case as evaluated; only in cases/<id>.json.
	Case *abi.TestCase `json:"case,omitempty"`
}

// MetricResult is one metric's outcome on one case.
type MetricResult struct {
	Metric    string   `json:"metric"`
	Kind      string   `json:"kind"`
	Status    string   `json:"status"`
	Gated     bool     `json:"gated"`
	Score     *float64 `json:"score,omitempty"`
	Threshold float64  `json:"threshold"`
	Reason    string   `json:"reason,omitempty"`
	ScoreMode string   `json:"score_mode,omitempty"`
	// ErrorClass tells judge faults from plugin faults apart for the summary:
	// "judge", "plugin" or "metric".
	ErrorClass string `json:"error_class,omitempty"`
	// VerdictNote says when the plugin's advisory success disagreed with
	// the host's verdict.
	VerdictNote string          `json:"verdict_note,omitempty"`
	Error       *abi.Error      `json:"error,omitempty"`
	Details     json.RawMessage `json:"details,omitempty"`
	Usage       JudgeUsage      `json:"usage"`
	// LatencyMS is the metric's time on the case, CompileWaitMS included.
	LatencyMS float64 `json:"latency_ms"`
	// CompileWaitMS is the part of LatencyMS the case waited for a Wasm
	// plugin still compiling in the background (a run's first cases);
	// the metric's own time is the rest.
	CompileWaitMS float64 `json:"compile_wait_ms,omitzero"`
	// Fuel is the work a Wasm plugin's guest did for this result: one
	// unit per Wasm instruction, bulk memory and table operations by
	// their size; the same on every machine (max_fuel bounds it per call).
	Fuel uint64 `json:"fuel,omitzero"`
	// Spread is the samples of a metric with samples: N and one judge; the
	// score is their mean (see repeat.go).
	Spread *Spread `json:"spread,omitempty"`
	// Panel is each judge's score of a metric with judges: [...], and
	// Aggregate how they were combined into Score.
	Panel     []PanelVote `json:"panel,omitempty"`
	Aggregate string      `json:"aggregate,omitempty"`
	// DAGSpread is, for a dag metric scored more than once, how its walks
	// of the graph differed per node (dagsamples.go).
	DAGSpread *DAGSpread `json:"dag_spread,omitempty"`
	// SamplesTaken is how many scorings adaptive samples took of the case
	// (per judge; the most of any judge of a panel).
	SamplesTaken int `json:"samples_taken,omitempty"`

	// A judge cascade's record (judge_cascade): DecidedBy is the judge
	// whose scoring is the result; PPass the pass probability the last
	// judge that was given the choice to escalate had, and PPassFrom where
	// it came from ("candidates", "samples" or "verdict"); EscalatedBecause
	// says why each earlier judge handed the case on (empty when the first
	// judge decided). StrongOnlyUSD estimates what the cascade's last
	// judge alone would have spent on the case.
	DecidedBy        string   `json:"decided_by,omitempty"`
	PPass            *float64 `json:"p_pass,omitempty"`
	PPassFrom        string   `json:"p_pass_from,omitempty"`
	EscalatedBecause string   `json:"escalated_because,omitempty"`
	StrongOnlyUSD    *float64 `json:"strong_only_usd,omitempty"`
}

// JudgeUsage sums the judge work done for one metric on one case (or a
// metric, or a run). "Judge calls" everywhere — the table, summary.json,
// the report, estimate — means Calls: upstream chat completions, repairs
// and sample top-ups included, cache hits excluded.
type JudgeUsage struct {
	// Requests is the judge requests plugins made (one may cost several
	// calls, or none when cached or refused).
	Requests int `json:"requests"`
	// Calls is upstream chat completions.
	Calls int `json:"calls"`
	// Attempts is HTTP attempts, retries included.
	Attempts int `json:"http_attempts"`
	// CacheHits were answered from the judge cache; Replayed from a
	// recorded judge session (offline_recording), which is not a cache the
	// run filled, so it is counted apart.
	CacheHits int `json:"cache_hits"`
	Replayed  int `json:"replayed,omitzero"`
	// InputTokens, OutputTokens and USD are as the judge reported them;
	// UsageUnknown counts requests whose reply had no usage block, which
	// makes these lower bounds.
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	UsageUnknown int     `json:"usage_unknown,omitzero"`
	// CachedInputTokens of InputTokens were served from the provider's
	// prompt cache and CacheWriteInputTokens written to it, as the
	// provider reported them; USD priced each at its rate.
	CachedInputTokens     int `json:"cached_input_tokens,omitzero"`
	CacheWriteInputTokens int `json:"cache_write_input_tokens,omitzero"`
	// Unpriced counts requests that made calls on a judge without a price
	// (a model not in the price table, no price: in its config): USD
	// leaves them out, so it is then a lower bound.
	Unpriced int `json:"unpriced,omitzero"`
}

// CachedShare is the share of input tokens served from the provider's
// prompt cache, rounded to four decimals; nil when no input was counted.
func (u JudgeUsage) CachedShare() *float64 {
	if u.InputTokens <= 0 {
		return nil
	}
	v := Round4(float64(u.CachedInputTokens) / float64(u.InputTokens))
	return &v
}

// Add counts one response; replayed says its judge answers from a
// recorded session, whose hits are replays rather than cache hits.
func (u *JudgeUsage) Add(r abi.Usage, replayed bool) {
	u.Requests++
	u.Calls += r.Calls
	u.Attempts += r.Attempts
	switch {
	case r.CacheHit && replayed:
		u.Replayed++
	case r.CacheHit:
		u.CacheHits++
	}
	if r.UsageUnknown {
		u.UsageUnknown++
	}
	u.InputTokens += r.InputTokens
	u.OutputTokens += r.OutputTokens
	u.USD += r.USD
	u.CachedInputTokens += r.CachedInputTokens
	u.CacheWriteInputTokens += r.CacheWriteInputTokens
	if r.Unpriced {
		u.Unpriced++
	}
}

// Merge adds o's counts to u's.
func (u *JudgeUsage) Merge(o JudgeUsage) {
	u.Requests += o.Requests
	u.Calls += o.Calls
	u.Attempts += o.Attempts
	u.CacheHits += o.CacheHits
	u.Replayed += o.Replayed
	u.UsageUnknown += o.UsageUnknown
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.USD += o.USD
	u.CachedInputTokens += o.CachedInputTokens
	u.CacheWriteInputTokens += o.CacheWriteInputTokens
	u.Unpriced += o.Unpriced
}

// Spread is how one judge's repeated scorings of a case (samples: N) fall.
type Spread struct {
	// Scores are the samples' scores, in sample order.
	Scores []float64 `json:"scores"`
	Mean   float64   `json:"mean"`
	// StdDev is the samples' standard deviation (n-1 in the denominator).
	StdDev float64 `json:"stddev"`
	// Flipped says the samples disagree on pass/fail at the threshold: a
	// case whose verdict one more run could change.
	Flipped bool `json:"flipped,omitzero"`
	// CIWidth is the width of the 95% t interval of the mean, for
	// adaptive samples (what stop_at_ci_width is compared with).
	CIWidth *float64 `json:"ci_width,omitempty"`
}

// PanelVote is one judge's part in a panel's score of a case: its score
// (the mean of its samples), its verdict, and its spread when it sampled.
type PanelVote struct {
	Judge  string     `json:"judge"`
	Model  string     `json:"model,omitempty"`
	Status string     `json:"status"`
	Score  *float64   `json:"score,omitempty"`
	Spread *Spread    `json:"spread,omitempty"`
	Reason string     `json:"reason,omitempty"`
	Error  *abi.Error `json:"error,omitempty"`
}

// DAGSpread is how the scorings of a dag metric with samples: N (or a
// panel) walked its graph on one case: per node how often it ran and
// which verdicts it gave, per leaf how often it fired and the spread of
// its score. The case's Details stay the first scoring's walk; this is
// what the other walks add.
type DAGSpread struct {
	// Scorings is how many walks were read (samples × judges).
	Scorings int `json:"scorings"`
	// Paths is how many distinct paths (nodes run with their verdicts)
	// the walks took; PathDiffers says more than one.
	Paths       int  `json:"paths"`
	PathDiffers bool `json:"path_differs,omitzero"`
	// Nodes in the order the walks first ran them.
	Nodes []NodeSpread `json:"nodes"`
	// Leaves fired in any walk, sorted by node then verdict.
	Leaves []LeafSpread `json:"leaves,omitempty"`
}

// NodeSpread is one node across a case's walks.
type NodeSpread struct {
	Node string `json:"node"`
	// Ran counts the walks that ran the node; Failed those whose run of it
	// ended in an error.
	Ran    int `json:"ran"`
	Failed int `json:"failed,omitzero"`
	// Verdicts counts each verdict the node gave, sorted by verdict.
	Verdicts []VerdictCount `json:"verdicts,omitempty"`
	// Differs says the walks that ran the node did not all give one verdict.
	Differs bool `json:"differs,omitzero"`
}

// VerdictCount is how many walks gave a node one verdict.
type VerdictCount struct {
	Verdict string `json:"verdict"`
	Count   int    `json:"count"`
}

// LeafSpread is one leaf across a case's walks: how often it fired, and
// the mean and standard deviation (n-1) of the score it gave when it did
// (a metric leaf's child score varies; a score leaf's does not).
type LeafSpread struct {
	Node    string  `json:"node"`
	Verdict string  `json:"verdict"`
	Fired   int     `json:"fired"`
	Mean    float64 `json:"mean"`
	StdDev  float64 `json:"stddev,omitzero"`
}

// maxLineBytes bounds one line read back: a larger one is not a line this
// package wrote whole.
const maxLineBytes = 256 << 20

// Each reads results.jsonl at path, calling fn with each case in file
// order; each call has a CaseResult of its own, which fn may keep. A line
// that does not decode is an error naming path:line. fn may stop the walk
// by returning an error, which Each returns as is.
func Each(path string, fn func(r *CaseResult) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	for line := 1; sc.Scan(); line++ {
		r := new(CaseResult)
		if err := DecodeLine(sc.Bytes(), r); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// EachIn is Each over dir/results.jsonl giving each case to sink: the one
// read of a run's results that builds its reports from the file.
func EachIn(dir string, sink Sink) error {
	return Each(filepath.Join(dir, "results.jsonl"), func(r *CaseResult) error {
		sink.Add(r)
		return nil
	})
}

// ReadCase reads cases/<id>.json of the output directory dir: the case as
// evaluated with every metric's details.
func ReadCase(dir, caseID string) (*CaseResult, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cases", CaseFileName(caseID)))
	if err != nil {
		return nil, fmt.Errorf("read case %q: %w", caseID, err)
	}
	var r CaseResult
	if err := DecodeLine(b, &r); err != nil {
		return nil, fmt.Errorf("read case %q: %s: %w", caseID, CaseFileName(caseID), err)
	}
	return &r, nil
}

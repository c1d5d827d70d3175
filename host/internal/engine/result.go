package engine

import (
	"bufio"
	"encoding/json"
	"errors"
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
	LatencyMS   float64         `json:"latency_ms"`
	// Fuel is the work a Wasm plugin's guest did for this result: one
	// unit per Wasm instruction, bulk memory and table operations by
	// their size; the same on every machine (max_fuel bounds it per call).
	Fuel uint64 `json:"fuel,omitempty"`
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

	caseID string // set when read back for the summary
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
	Replayed  int `json:"replayed,omitempty"`
	// InputTokens, OutputTokens and USD are as the judge reported them;
	// UsageUnknown counts requests whose reply had no usage block, which
	// makes these lower bounds.
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	UsageUnknown int     `json:"usage_unknown,omitempty"`
}

// add counts one response; replayed says its judge answers from a
// recorded session, whose hits are replays rather than cache hits.
func (u *JudgeUsage) add(r abi.Usage, replayed bool) {
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
}

func (u *JudgeUsage) merge(o JudgeUsage) {
	u.Requests += o.Requests
	u.Calls += o.Calls
	u.Attempts += o.Attempts
	u.CacheHits += o.CacheHits
	u.Replayed += o.Replayed
	u.UsageUnknown += o.UsageUnknown
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.USD += o.USD
}

// EachResult reads results.jsonl at path, calling fn for each case in file
// order; a line that does not decode is an error naming path:line. fn may
// stop the walk by returning an error, which EachResult returns as is.
func EachResult(path string, fn func(r *CaseResult) error) error {
	seen := stringSet{}
	return eachLine(path, func(line int, b []byte) error {
		var r CaseResult
		if !decodeLineFastShared(b, &r, true, seen) {
			r = CaseResult{}
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
		}
		return fn(&r)
	})
}

// EachOutcome is EachResult for walks that read only what each metric
// decided — the summary, JUnit, choosing report.html's cases: the metrics'
// Details are left nil. They are most of a line, and encoding/json copies
// a RawMessage; skipping them makes a walk of results.jsonl ~15% cheaper
// (BenchmarkEachOutcome). Every other field, and every error, is what EachResult gives (details
// of any JSON value are accepted by both).
func EachOutcome(path string, fn func(r *CaseResult) error) error {
	seen := stringSet{}
	return eachLine(path, func(line int, b []byte) error {
		var fast CaseResult
		if decodeLineFastShared(b, &fast, false, seen) {
			return fn(&fast)
		}
		var lr outcomeLine
		if err := json.Unmarshal(b, &lr); err != nil {
			// EachResult's error, which names CaseResult's fields
			// (details cannot fail to decode, so it fails too).
			var r CaseResult
			if ferr := json.Unmarshal(b, &r); ferr != nil {
				err = ferr
			}
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		r := CaseResult{CaseID: lr.CaseID, ConfigHash: lr.ConfigHash, Identity: lr.Identity, CaseDigest: lr.CaseDigest, Worker: lr.Worker, Case: lr.Case}
		if lr.Metrics != nil {
			r.Metrics = make([]MetricResult, len(lr.Metrics))
			for i := range lr.Metrics {
				r.Metrics[i] = lr.Metrics[i].MetricResult
			}
		}
		return fn(&r)
	})
}

// EachResultAt is EachResult for the cases at the given 0-based positions
// of results.jsonl (in increasing order); the other lines are not
// decoded. It stops reading after the last one.
func EachResultAt(path string, at []int, fn func(r *CaseResult) error) error {
	if len(at) == 0 {
		return nil
	}
	errDone := errors.New("done")
	next := 0
	err := eachLine(path, func(line int, b []byte) error {
		if line-1 != at[next] {
			return nil
		}
		next++
		var r CaseResult
		if !decodeLineFast(b, &r, true) {
			r = CaseResult{}
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
		}
		if err := fn(&r); err != nil {
			return err
		}
		if next == len(at) {
			return errDone
		}
		return nil
	})
	if err == errDone {
		return nil
	}
	return err
}

// outcomeLine is a results line decoded without the metrics' details.
type outcomeLine struct {
	CaseID     string          `json:"case_id"`
	ConfigHash string          `json:"config_hash"`
	Identity   string          `json:"identity,omitempty"`
	CaseDigest string          `json:"case_digest,omitempty"`
	Worker     string          `json:"worker,omitempty"`
	Metrics    []outcomeMetric `json:"metrics"`
	Case       *abi.TestCase   `json:"case,omitempty"`
}

// outcomeMetric's Details field, at a shallower depth, takes the key
// "details" from the embedded MetricResult's (encoding/json's rule for
// embedded fields), so the details are checked but not copied.
type outcomeMetric struct {
	MetricResult
	Details ignoredValue `json:"details,omitempty"`
}

// ignoredValue accepts any JSON value and keeps nothing.
type ignoredValue struct{}

func (*ignoredValue) UnmarshalJSON([]byte) error { return nil }

// eachLine calls fn with each line of the file at path (valid only during
// the call) and its 1-based number.
func eachLine(path string, fn func(line int, b []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 256<<20)
	for line := 1; sc.Scan(); line++ {
		if err := fn(line, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// ReadCase reads cases/<id>.json of the output directory dir: the case as
// evaluated with every metric's details.
func ReadCase(dir, caseID string) (*CaseResult, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cases", caseFileName(caseID)))
	if err != nil {
		return nil, fmt.Errorf("read case %q: %w", caseID, err)
	}
	var r CaseResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read case %q: %w", caseID, err)
	}
	return &r, nil
}

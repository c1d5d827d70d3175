package calibrate

import (
	"fmt"
	"path/filepath"

	"github.com/agentanvil/anvil/host/internal/results"
)

// Results are the judge's side of a calibration: one run's results,
// gathered one case at a time (a results.Sink), from a run as it writes
// them or from its results.jsonl (LoadResults).
type Results struct {
	Dir        string
	ConfigHash string
	// Cases holds every case id of the run.
	Cases map[string]bool
	// Metrics are the metrics in the run, in first-seen order.
	Metrics []string
	info    map[string]results.MetricResult // metric → its first result (kind, threshold)
	scored  map[string]map[string]judgement // metric → case → the judge's outcome
	n       int                             // cases added
	err     error                           // the first case that cannot be taken
}

// judgement is what the judge gave one case on one metric.
type judgement struct {
	score float64
	pass  bool
}

// NewResults returns empty Results of the run in the output directory dir.
func NewResults(dir string) *Results {
	return &Results{
		Dir:    dir,
		Cases:  map[string]bool{},
		info:   map[string]results.MetricResult{},
		scored: map[string]map[string]judgement{},
	}
}

// Add takes one case of the run, in results order. A case id seen before
// is an error (Err), naming its line of results.jsonl.
func (r *Results) Add(cr *results.CaseResult) {
	r.n++
	if r.err != nil {
		return
	}
	if r.Cases[cr.CaseID] {
		r.err = fmt.Errorf("%s:%d: case_id: %q appears twice", filepath.Join(r.Dir, "results.jsonl"), r.n, cr.CaseID)
		return
	}
	r.Cases[cr.CaseID] = true
	if r.ConfigHash == "" {
		r.ConfigHash = cr.ConfigHash
	}
	for _, mr := range cr.Metrics {
		if _, ok := r.info[mr.Metric]; !ok {
			mr.Details = nil // not needed, and not to be held
			r.info[mr.Metric] = mr
			r.Metrics = append(r.Metrics, mr.Metric)
			r.scored[mr.Metric] = map[string]judgement{}
		}
		if mr.Score != nil && (mr.Status == results.StatusPassed || mr.Status == results.StatusFailed) {
			r.scored[mr.Metric][cr.CaseID] = judgement{score: *mr.Score, pass: mr.Status == results.StatusPassed}
		}
	}
}

// Err is why a case added could not be taken.
func (r *Results) Err() error {
	if r.err != nil {
		return fmt.Errorf("results %s: %w", r.Dir, r.err)
	}
	return nil
}

// LoadResults reads dir/results.jsonl, the output of `anvil-host run`,
// giving each case to also (nil: nothing) as well: one read serves the
// calibration and what else is built from the run's results.
func LoadResults(dir string, also results.Sink) (*Results, error) {
	r := NewResults(dir)
	sink := results.Sinks{r}
	if also != nil {
		sink = append(sink, also)
	}
	if err := results.EachIn(dir, sink); err != nil {
		return nil, fmt.Errorf("results %s: %w", dir, err)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

package calibrate

import (
	"fmt"
	"path/filepath"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// Results are the judge's side of a calibration: one run's results.jsonl.
type Results struct {
	Dir        string
	ConfigHash string
	// Cases holds every case id of the run.
	Cases map[string]bool
	// Metrics are the metrics in the run, in first-seen order.
	Metrics []string
	info    map[string]engine.MetricResult  // metric → its first result (kind, threshold)
	scored  map[string]map[string]judgement // metric → case → the judge's outcome
}

// judgement is what the judge gave one case on one metric.
type judgement struct {
	score float64
	pass  bool
}

// LoadResults reads dir/results.jsonl, the output of `anvil-host run`.
func LoadResults(dir string) (*Results, error) {
	r := &Results{
		Dir:    dir,
		Cases:  map[string]bool{},
		info:   map[string]engine.MetricResult{},
		scored: map[string]map[string]judgement{},
	}
	path := filepath.Join(dir, "results.jsonl")
	line := 0
	err := engine.EachResult(path, func(cr *engine.CaseResult) error {
		line++
		if r.Cases[cr.CaseID] {
			return fmt.Errorf("%s:%d: case_id: %q appears twice", path, line, cr.CaseID)
		}
		r.Cases[cr.CaseID] = true
		if r.ConfigHash == "" {
			r.ConfigHash = cr.ConfigHash
		}
		for _, mr := range cr.Metrics {
			if _, ok := r.info[mr.Metric]; !ok {
				r.info[mr.Metric] = mr
				r.Metrics = append(r.Metrics, mr.Metric)
				r.scored[mr.Metric] = map[string]judgement{}
			}
			if mr.Score != nil && (mr.Status == engine.StatusPassed || mr.Status == engine.StatusFailed) {
				r.scored[mr.Metric][cr.CaseID] = judgement{score: *mr.Score, pass: mr.Status == engine.StatusPassed}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", dir, err)
	}
	return r, nil
}

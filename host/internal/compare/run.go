package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentanvil/anvil/host/internal/results"
)

// Run is one run's output directory as compare reads it.
type Run struct {
	Dir string
	// Summary is summary.json, nil when the directory has none (a run
	// killed before it wrote one): results.jsonl alone is enough.
	Summary *results.Summary
	// ConfigHash is the hash every line of results.jsonl carries.
	ConfigHash string
	// Cases are the case ids in results.jsonl order.
	Cases []string
	// Metrics are the metric names in first-seen order, with the settings
	// their results carry.
	Metrics []MetricInfo
	// results[caseID][metric] is that metric's outcome on that case.
	results map[string]map[string]results.MetricResult
	// caseDigests[caseID] is what the case asked (identity.CaseDigest),
	// "" in results written before it was recorded.
	caseDigests map[string]string
}

// MetricInfo is what a run's results say about a metric's configuration.
type MetricInfo struct {
	Name      string  `json:"metric"`
	Kind      string  `json:"kind"`
	Gated     bool    `json:"gated"`
	Threshold float64 `json:"threshold"`
	// Cascade: the run's results of the metric were decided by a judge
	// cascade (they carry decided_by).
	Cascade bool `json:"cascade,omitempty"`
}

// Load reads the output directory dir of `anvil-host run`: results.jsonl
// (required) and summary.json (when present). A line that does not decode,
// a case that appears twice and lines of different config hashes are
// errors naming the file and line. Each case is given to also (nil:
// nothing) as it is read: one read of results.jsonl serves the comparison
// and the run's reports.
func Load(dir string, also results.Sink) (*Run, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("run %s: not a directory (want the output directory of `anvil-host run`)", dir)
	}
	r := &Run{Dir: dir, results: map[string]map[string]results.MetricResult{}, caseDigests: map[string]string{}}
	path := filepath.Join(dir, "results.jsonl")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s: no results.jsonl (want the output directory of `anvil-host run`)", dir)
	}
	metricAt := map[string]int{}
	line := 0
	err = results.Each(path, func(cr *results.CaseResult) error {
		line++
		if cr.CaseID == "" {
			return fmt.Errorf("%s:%d: case_id: empty", path, line)
		}
		if _, dup := r.results[cr.CaseID]; dup {
			return fmt.Errorf("%s:%d: case_id: %q appears twice", path, line, cr.CaseID)
		}
		if r.ConfigHash == "" {
			r.ConfigHash = cr.ConfigHash
		} else if cr.ConfigHash != r.ConfigHash {
			return fmt.Errorf("%s:%d: config_hash: %q, but earlier lines have %q (results of two configurations in one run)", path, line, cr.ConfigHash, r.ConfigHash)
		}
		r.Cases = append(r.Cases, cr.CaseID)
		byMetric := make(map[string]results.MetricResult, len(cr.Metrics))
		for _, mr := range cr.Metrics {
			mr.Details = nil // not compared, and not to be held per case
			if _, dup := byMetric[mr.Metric]; dup {
				return fmt.Errorf("%s:%d: metric %q appears twice for case %q", path, line, mr.Metric, cr.CaseID)
			}
			byMetric[mr.Metric] = mr
			if _, seen := metricAt[mr.Metric]; !seen {
				metricAt[mr.Metric] = len(r.Metrics)
				r.Metrics = append(r.Metrics, MetricInfo{Name: mr.Metric, Kind: mr.Kind, Gated: mr.Gated, Threshold: mr.Threshold})
			}
			if mr.DecidedBy != "" {
				r.Metrics[metricAt[mr.Metric]].Cascade = true
			}
		}
		r.results[cr.CaseID] = byMetric
		r.caseDigests[cr.CaseID] = cr.CaseDigest
		if also != nil {
			also.Add(cr)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		var s results.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("run %s: summary.json: %w", dir, err)
		}
		r.Summary = &s
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	return r, nil
}

// metric returns the run's settings for the named metric.
func (r *Run) metric(name string) (MetricInfo, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricInfo{}, false
}

// scored returns the metric's score on the case when the run scored it
// (status passed or failed), and whether it passed.
func (r *Run) scored(caseID, metric string) (score float64, passed, ok bool) {
	mr, found := r.results[caseID][metric]
	if !found || mr.Score == nil || (mr.Status != results.StatusPassed && mr.Status != results.StatusFailed) {
		return 0, false, false
	}
	return *mr.Score, mr.Status == results.StatusPassed, true
}

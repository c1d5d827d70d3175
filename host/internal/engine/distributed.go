package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/internal/results"

	"github.com/agentanvil/anvil/abi"
)

// The seams a distributed run (host/internal/cluster) uses: the engine
// stays the one place that prepares, evaluates and writes outputs, and a
// coordinator and its workers call it instead of copying it. Nothing here
// knows how cases travel.

// Dispatcher evaluates a run's cases somewhere else. Dispatch reads cases
// until the channel is closed and calls emit once per case with its
// result; it returns when every case it read has been emitted, or with
// an error when it cannot go on (the run then stops, incomplete). emit
// fails only when the results can no longer be written.
type Dispatcher interface {
	Dispatch(ctx context.Context, resumed Resumed, cases <-chan *abi.TestCase, emit func(*results.CaseResult) error) error
}

// Resumed is what --resume found in results.jsonl, read once by the
// engine before the first case is fed: the cases written (complete, so
// never fed) and those whose retryable error's line was removed (fed
// again). Both are empty for a fresh run; the dispatcher owns its copies.
type Resumed struct {
	Written map[string]bool
	Retried map[string]bool
}

// PreparedMetric is one metric's once-per-run work (G-Eval's steps), as
// the coordinator did it and its workers adopt it.
type PreparedMetric struct {
	Metric  string             `json:"metric"`
	State   json.RawMessage    `json:"state,omitempty"`
	Details json.RawMessage    `json:"details,omitempty"`
	Error   *abi.Error         `json:"error,omitempty"`
	Usage   results.JudgeUsage `json:"usage"`
}

// Prepare does every metric's once-per-run work now (Run does it again
// only for metrics not yet prepared) and returns it, in config order.
func (e *Engine) Prepare(ctx context.Context) []PreparedMetric {
	e.prepareAll(ctx, nil)
	for _, m := range e.allInOrder() {
		m.adopted = true
	}
	return e.PreparedMetrics()
}

// PreparedMetrics is the once-per-run work done so far, in config order.
func (e *Engine) PreparedMetrics() []PreparedMetric {
	var out []PreparedMetric
	for _, m := range e.allInOrder() {
		if m.prepared == nil && m.prepareErr == nil && m.prepareDetails == nil {
			continue
		}
		out = append(out, PreparedMetric{Metric: m.key, State: m.prepared, Details: m.prepareDetails,
			Error: m.prepareErr, Usage: m.prepareUsage})
	}
	return out
}

// AdoptPrepared takes another process's once-per-run work instead of
// doing it: a worker evaluates with the coordinator's G-Eval steps. A
// metric this configuration does not have, or one whose kind prepares
// nothing, is an error.
func (e *Engine) AdoptPrepared(ps []PreparedMetric) error {
	for _, p := range ps {
		m := e.all[p.Metric]
		if m == nil {
			return fmt.Errorf("prepared state for metric %q, which this configuration does not have", p.Metric)
		}
		if m.plugin == nil || !m.desc.Prepare {
			return fmt.Errorf("prepared state for metric %q, whose kind %s prepares nothing", p.Metric, m.kind)
		}
		m.prepared, m.prepareDetails, m.prepareErr, m.prepareUsage = p.State, p.Details, p.Error, p.Usage
		m.adopted = true
	}
	return nil
}

// Evaluate runs every metric on one case, as a run's workers do. A
// judge that went down while it ran shows in JudgeDown, and the result
// then holds that judge's errors.
func (e *Engine) Evaluate(ctx context.Context, c *abi.TestCase) *results.CaseResult {
	return e.evaluate(ctx, c, nil)
}

// JudgeDown is why a judge cannot be called any more (its breaker
// opened), nil while every judge is up.
func (e *Engine) JudgeDown() error {
	for _, name := range sortedKeys(e.judges.byName) {
		if err := e.judges.byName[name].Unavailable(); err != nil {
			return err
		}
	}
	return nil
}

// UnconfiguredJudges names the configured judges this process cannot call
// (no API key), sorted: a worker must agree with its coordinator on them.
func (e *Engine) UnconfiguredJudges() []string {
	return sortedKeys(e.judges.unavailable)
}

// RecordedJudges maps each judge this process replays from its
// offline_recording to the SHA-256 digest (sha256:<hex>) of the file it
// loaded: a cluster ships those bytes to its workers.
func (e *Engine) RecordedJudges() map[string]string {
	out := make(map[string]string, len(e.judges.recordings))
	for k, v := range e.judges.recordings {
		out[k] = v
	}
	return out
}

// CheckResult checks a case result another process computed against this
// configuration before it is written: this config hash and identity (the
// same judges as resolved here, the same built-in kinds), the same metrics
// in the same order with their kinds, gates and thresholds, and for each
// a known status that agrees with its score (the host's verdict rule). A
// peer's result that fails it is not written.
func (e *Engine) CheckResult(r *results.CaseResult) error {
	if r.ConfigHash != e.hash {
		return fmt.Errorf("case %q: config hash %s, this run's is %s", r.CaseID, r.ConfigHash, e.hash)
	}
	if r.Identity != e.identity.Digest {
		return fmt.Errorf("case %q: evaluated by judges and kinds of identity %q, this run's is %s", r.CaseID, r.Identity, e.identity.Digest)
	}
	if r.Case == nil || r.Case.ID != r.CaseID {
		return fmt.Errorf("case %q: the result does not carry the case it is about", r.CaseID)
	}
	if r.CaseDigest != identity.CaseDigest(r.Case) {
		return fmt.Errorf("case %q: case digest %q is not its case's", r.CaseID, r.CaseDigest)
	}
	if len(r.Metrics) != len(e.metrics) {
		return fmt.Errorf("case %q: %d metric results, this configuration runs %d metrics", r.CaseID, len(r.Metrics), len(e.metrics))
	}
	for i, m := range e.metrics {
		got := &r.Metrics[i]
		if got.Metric != m.key || got.Kind != m.kind || got.Gated != m.gated || got.Threshold != m.threshold {
			return fmt.Errorf("case %q: metric %d is %s (%s, gated %v, threshold %v); this configuration has %s (%s, gated %v, threshold %v)",
				r.CaseID, i, got.Metric, got.Kind, got.Gated, got.Threshold, m.key, m.kind, m.gated, m.threshold)
		}
		switch got.Status {
		case results.StatusPassed, results.StatusFailed:
			if got.Score == nil || math.IsNaN(*got.Score) || *got.Score < 0 || *got.Score > 1 {
				return fmt.Errorf("case %q: metric %s is %s without a score in [0,1]", r.CaseID, m.key, got.Status)
			}
			if verdict(*got.Score, m.threshold) != got.Status {
				return fmt.Errorf("case %q: metric %s says %s for score %v against threshold %v", r.CaseID, m.key, got.Status, *got.Score, m.threshold)
			}
		case results.StatusError, results.StatusSkipped:
			if got.Score != nil {
				return fmt.Errorf("case %q: metric %s is %s but has a score", r.CaseID, m.key, got.Status)
			}
		default:
			return fmt.Errorf("case %q: metric %s has status %q", r.CaseID, m.key, got.Status)
		}
	}
	return nil
}

// PluginDigests maps each configured plugin to the digest it was loaded
// and verified under.
func (e *Engine) PluginDigests() map[string]string {
	out := make(map[string]string, len(e.digests))
	for k, v := range e.digests {
		out[k] = v
	}
	return out
}

// CacheMode is the judge cache mode in effect: off, rw or replay.
func (e *Engine) CacheMode() string { return e.cacheMode() }

// Config is the loaded configuration (read-only).
func (e *Engine) Config() *config.Config { return e.cfg }

// DefaultConcurrency is the cases in flight when none is configured
// (twice the largest judge's max_concurrency, at least 8).
func (e *Engine) DefaultConcurrency() int {
	if e.cfg.Defaults.Concurrency > 0 {
		return e.cfg.Defaults.Concurrency
	}
	return e.defaultConcurrency()
}

// JudgeConfig is a configured judge's configuration as the run uses it
// (defaults and environment fallbacks applied; no key).
func (e *Engine) JudgeConfig(name string) (judge.Config, bool) {
	j := e.judges.byName[name]
	if j == nil {
		return judge.Config{}, false
	}
	return j.Config(), true
}

// Unevaluated is the result of a case no process could evaluate — on a
// cluster, one every worker it was delivered to died or stalled on: each
// metric that would have run is an error saying why, so the gate counts
// the case under max_error_rate like any other error (a metric skipped
// for the whole run stays skipped).
func (e *Engine) Unevaluated(c *abi.TestCase, why string) *results.CaseResult {
	r := &results.CaseResult{CaseID: c.ID, ConfigHash: e.hash, Identity: e.identity.Digest, CaseDigest: identity.CaseDigest(c),
		Case: c, Metrics: make([]results.MetricResult, len(e.metrics))}
	for i, m := range e.metrics {
		mr := results.MetricResult{Metric: m.key, Kind: m.kind, Gated: m.gated, Threshold: m.threshold}
		if m.skip != "" {
			mr.Status, mr.Reason = results.StatusSkipped, m.skip
		} else {
			setError(&mr, &abi.Error{Code: abi.CodeMetric, Message: why})
		}
		r.Metrics[i] = mr
	}
	return r
}

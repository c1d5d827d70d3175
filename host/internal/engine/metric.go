package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/plugin"
	"github.com/agentanvil/anvil/host/internal/results"
)

// metric is a configured metric, resolved to what runs it.
type metric struct {
	cfg        *config.Metric
	key        string
	kind       string
	threshold  float64
	gated      bool
	judgeName  string
	judgeModel string
	params     json.RawMessage
	// panel is the judges that score each case (judgeName first); one
	// judge unless the metric names judges. aggregate combines them and
	// samples is how many times each scores each case (see repeat.go).
	panel     []string
	aggregate string
	samples   int
	// adaptive is the metric's adaptive samples (Adaptive() false when
	// samples is a number); samples is then their max.
	adaptive config.Samples
	// cascade names the judges cheapest first (none: no cascade), band
	// the P(pass) interval in which a judge hands the case on (cascade.go).
	cascade []string
	band    [2]float64

	// A plugin kind.
	plugin plugin.Plugin
	desc   abi.KindDescriptor
	// A dag metric.
	graph *dag.Graph
	// dagFields are graph.RequiredFields(), computed once at load: every
	// case is checked against them.
	dagFields []string

	needsJudge bool
	// childOnly names the dag metric this metric is a child of, when it
	// runs only inside that DAG (not standalone).
	childOnly string
	// skip, when set, is why every case is skipped (no judge configured).
	skip string

	prepared       json.RawMessage
	prepareDetails json.RawMessage
	prepareErr     *abi.Error
	// prepareDone, when set, is closed when this run's prepare of the
	// metric has finished (startPrepares).
	prepareDone  <-chan struct{}
	prepareUsage results.JudgeUsage
	// adopted: the once-per-run work was done before the run (Prepare) or
	// by another process (AdoptPrepared); the run does not do it again.
	adopted bool
}

// requiredFields are the fields every case needs for this metric.
func (m *metric) requiredFields() []string {
	if m.graph != nil {
		return m.dagFields
	}
	return m.desc.RequiredFields
}

// prepare runs the kind's once-per-run work.
func (e *Engine) prepare(ctx context.Context, m *metric, dry *dryRun) {
	if m.plugin == nil || !m.desc.Prepare || m.skip != "" || m.adopted {
		return
	}
	svc := e.services(m, dry)
	res, err := m.plugin.Prepare(ctx, svc, &abi.PrepareRequest{
		Kind: m.kind, Metric: m.key, Config: m.params, JudgeModel: m.judgeModel,
	})
	m.prepareUsage = svc.spent()
	switch {
	case err != nil:
		m.prepareErr = asABI(err)
	case res.Error != nil:
		m.prepareErr = res.Error
	default:
		m.prepared, m.prepareDetails = res.State, res.Details
	}
	if m.prepareErr != nil {
		e.logger.Error("prepare failed; every case of this metric will carry the error", "metric", m.key, "err", m.prepareErr)
	}
}

func (e *Engine) services(m *metric, dry *dryRun) *services {
	return e.scoringServices(scoring{judge: m.judgeName}, dry)
}

// scoringServices routes a metric's unnamed judge requests to sc's judge,
// as its sc.sample-th scoring of the case (each sample is a cache entry of
// its own), through sc.group when the samples share calls.
func (e *Engine) scoringServices(sc scoring, dry *dryRun) *services {
	svc := &services{judges: e.judges, defaultJudge: sc.judge, sample: sc.sample, group: sc.group, logger: e.logger, dryRun: dry}
	if sc.capture {
		svc.scores = &[]scored{}
	}
	return svc
}

// measure runs one metric on one case. It never fails: every outcome,
// including a plugin trap or a judge fault, is a MetricResult.
func (e *Engine) measure(ctx context.Context, m *metric, c *abi.TestCase, dry *dryRun) (r results.MetricResult) {
	start := time.Now()
	r = results.MetricResult{Metric: m.key, Kind: m.kind, Gated: m.gated, Threshold: m.threshold}
	defer func() {
		r.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
		if r.Error != nil && r.Error.Code == abi.CodeRequestTooLarge {
			r.Error = tooLargeOnCase(r.Error, c)
		}
	}()
	if m.skip != "" {
		r.Status, r.Reason = results.StatusSkipped, m.skip
		return r
	}
	if missing := c.Missing(m.requiredFields()); len(missing) > 0 {
		r.Status = results.StatusSkipped
		r.Reason = fmt.Sprintf("case has no %s (needed by metric %s)", missing[0], m.key)
		r.Error = &abi.Error{Code: abi.CodeMissingField, Field: missing[0], Message: r.Reason}
		return r
	}
	// The plugin's compile first: prepare waits for it too, and the time
	// is the compile's, not the metric's.
	if m.plugin != nil {
		r.CompileWaitMS = ms(awaitCompile(ctx, m.plugin))
	}
	if m.prepareDone != nil {
		select {
		case <-m.prepareDone:
		case <-ctx.Done():
			setError(&r, asABI(ctx.Err()))
			return r
		}
	}
	if m.prepareErr != nil {
		setError(&r, m.prepareErr)
		return r
	}
	if len(m.cascade) > 0 {
		return e.measureCascade(ctx, m, c, dry, r)
	}
	if len(m.panel) > 1 || m.samples > 1 {
		return e.measureRepeated(ctx, m, c, dry, r, m.panel, false)
	}
	return e.score(ctx, m, c, dry, scoring{judge: m.judgeName, model: m.judgeModel}, r)
}

// scoring is one scoring of a case: the judge its unnamed requests go to,
// the sample it is, and the group its samples share calls through (nil
// when they do not: one sample, or a judge without n).
type scoring struct {
	judge, model string
	sample       int
	group        *sampleGroup
	// capture: the scoring is a cascade judge's, whose result carries
	// the P(pass) of its score.
	capture bool
}

// score runs the metric once on the case, as sc.
func (e *Engine) score(ctx context.Context, m *metric, c *abi.TestCase, dry *dryRun, sc scoring, r results.MetricResult) results.MetricResult {
	if m.graph != nil {
		return e.measureDAG(ctx, m, c, dry, sc, r)
	}
	svc := e.scoringServices(sc, dry)
	res, err := m.plugin.Measure(ctx, svc, &abi.MeasureRequest{
		Kind: m.kind, Metric: m.key, Config: m.params, Prepared: m.prepared,
		Threshold: m.threshold, JudgeModel: sc.model, Case: *c,
	})
	r.Usage = svc.spent()
	r.Fuel = svc.fuelSpent()
	if err != nil {
		setError(&r, asABI(err))
		return r
	}
	fromMeasure(&r, res)
	if sc.capture && r.Score != nil {
		r.PPass, r.PPassFrom = svc.passProbability(r.Threshold)
	}
	return r
}

// fromMeasure copies a plugin's result in and decides its verdict. The
// verdict is the host's: a guest's success and threshold are advisory and
// never change the status (a guest cannot pass a case the host would fail,
// nor loosen or tighten the configured threshold). A result with neither a
// score nor an error, or with a score outside [0,1], is an ABI violation.
func fromMeasure(r *results.MetricResult, res *abi.MeasureResult) {
	r.Reason, r.ScoreMode, r.Details = res.Reason, res.ScoreMode, res.Details
	if res.Error != nil {
		setError(r, res.Error)
		return
	}
	if res.Score == nil {
		setError(r, abi.Errorf(abi.CodeABI, "the plugin returned neither a score nor an error"))
		return
	}
	s := *res.Score
	if math.IsNaN(s) || s < 0 || s > 1 {
		setError(r, abi.Errorf(abi.CodeABI, "the plugin returned score %v, outside [0,1]", s))
		return
	}
	r.Score = &s
	r.Status = verdict(s, r.Threshold)
	if res.Success != (r.Status == results.StatusPassed) {
		r.VerdictNote = fmt.Sprintf("the plugin said success=%v; the host decides: score %.4g against threshold %.4g is %s",
			res.Success, s, r.Threshold, r.Status)
	}
}

// verdict is the one pass/fail rule: a score passes when it reaches the
// threshold.
func verdict(score, threshold float64) string {
	if score >= threshold {
		return results.StatusPassed
	}
	return results.StatusFailed
}

// setError records an error and classifies it: judge faults and plugin
// faults are counted apart from metric failures.
func setError(r *results.MetricResult, e *abi.Error) {
	r.Error = e
	r.Score = nil
	switch e.Code {
	case abi.CodeMissingField:
		r.Status = results.StatusSkipped
		r.Reason = e.Message
		return
	case abi.CodeJudge, abi.CodeCacheMiss, abi.CodeTruncated, abi.CodeRequestTooLarge, abi.CodeJudgeUnavailable:
		r.ErrorClass = "judge"
	case abi.CodeTrap, abi.CodeTimeout, abi.CodeABI, abi.CodeOutputTooLarge, abi.CodeBudget, abi.CodeCapability:
		r.ErrorClass = "plugin"
	default:
		r.ErrorClass = "metric"
	}
	r.Status = results.StatusError
}

func asABI(err error) *abi.Error {
	var ae *abi.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &abi.Error{Code: abi.CodeMetric, Message: err.Error()}
}

// tooLargeOnCase names the case and its largest field in a judge's
// request_too_large error: the judge sees only messages, the engine knows
// which part of the case made them large.
func tooLargeOnCase(e *abi.Error, c *abi.TestCase) *abi.Error {
	cp := *e
	field, size := "", 0
	names := append([]string(nil), abi.StandardFields...)
	names = append(names, sortedKeys(c.Extra)...)
	for _, f := range names {
		if text, ok := c.Field(f); ok && len(text) > size {
			field, size = f, len(text)
		}
	}
	cp.Message = fmt.Sprintf("case %q: %s", c.ID, e.Message)
	if field != "" {
		cp.Field = field
		cp.Message += fmt.Sprintf(" (its largest field is %s, %d characters)", field, size)
	}
	return &cp
}

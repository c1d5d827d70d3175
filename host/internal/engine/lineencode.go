package engine

import (
	"github.com/agentanvil/anvil/internal/abijson"
	"github.com/agentanvil/anvil/internal/jsonw"
	"strconv"
)

// The results writer encodes each line, and each case for cases/<id>.json,
// by hand when the value has the shape most lines have, and through
// encoding/json otherwise. Reflection over CaseResult — every string
// escaped through the encoder's state machine, every metric's details
// re-compacted — was a tenth of the writer's CPU per case. The bytes are
// json.Marshal's (FuzzAppendResultLine and internal/abijson's fuzz targets hold them
// to it); a field added to CaseResult, MetricResult or JudgeUsage must be
// added here too (abi.Error and abi.TestCase are internal/abijson's),
// and TestLineEncoderKnowsEveryField fails until it is.

// appendResultLine appends r's results line (r.Case is not written) as
// json.Marshal writes it, or reports false, having appended nothing
// anyone reads, when r holds what it leaves to encoding/json: a sampled
// or panel metric's spread, DAG spreads, a float encoding/json refuses,
// details that are not already in the form json.Marshal writes them.
func appendResultLine(b []byte, r *CaseResult) ([]byte, bool) {
	b = append(b, `{"case_id":`...)
	b = jsonw.AppendString(b, r.CaseID)
	b = append(b, `,"config_hash":`...)
	b = jsonw.AppendString(b, r.ConfigHash)
	b = abijson.AppendOptString(b, `,"identity":`, r.Identity)
	b = abijson.AppendOptString(b, `,"case_digest":`, r.CaseDigest)
	b = abijson.AppendOptString(b, `,"worker":`, r.Worker)
	b = append(b, `,"metrics":`...)
	if r.Metrics == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Metrics {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendMetricResult(b, &r.Metrics[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

func appendMetricResult(b []byte, m *MetricResult) ([]byte, bool) {
	if m.Spread != nil || m.Panel != nil || m.DAGSpread != nil ||
		!jsonw.Finite(m.Threshold) || !jsonw.Finite(m.LatencyMS) || !jsonw.Finite(m.Usage.USD) ||
		(m.Score != nil && !jsonw.Finite(*m.Score)) || !marshalForm(m.Details) {
		return b, false
	}
	b = append(b, `{"metric":`...)
	b = jsonw.AppendString(b, m.Metric)
	b = append(b, `,"kind":`...)
	b = jsonw.AppendString(b, m.Kind)
	b = append(b, `,"status":`...)
	b = jsonw.AppendString(b, m.Status)
	b = append(b, `,"gated":`...)
	b = jsonw.AppendBool(b, m.Gated)
	if m.Score != nil {
		b = append(b, `,"score":`...)
		b = jsonw.AppendFloat(b, *m.Score)
	}
	b = append(b, `,"threshold":`...)
	b = jsonw.AppendFloat(b, m.Threshold)
	b = abijson.AppendOptString(b, `,"reason":`, m.Reason)
	b = abijson.AppendOptString(b, `,"score_mode":`, m.ScoreMode)
	b = abijson.AppendOptString(b, `,"error_class":`, m.ErrorClass)
	b = abijson.AppendOptString(b, `,"verdict_note":`, m.VerdictNote)
	if m.Error != nil {
		b = append(b, `,"error":`...)
		b = abijson.AppendError(b, m.Error)
	}
	if len(m.Details) > 0 {
		b = append(b, `,"details":`...)
		b = append(b, m.Details...)
	}
	u := &m.Usage
	b = append(b, `,"usage":{"requests":`...)
	b = jsonw.AppendInt(b, u.Requests)
	b = append(b, `,"calls":`...)
	b = jsonw.AppendInt(b, u.Calls)
	b = append(b, `,"http_attempts":`...)
	b = jsonw.AppendInt(b, u.Attempts)
	b = append(b, `,"cache_hits":`...)
	b = jsonw.AppendInt(b, u.CacheHits)
	if u.Replayed != 0 {
		b = append(b, `,"replayed":`...)
		b = jsonw.AppendInt(b, u.Replayed)
	}
	b = append(b, `,"input_tokens":`...)
	b = jsonw.AppendInt(b, u.InputTokens)
	b = append(b, `,"output_tokens":`...)
	b = jsonw.AppendInt(b, u.OutputTokens)
	b = append(b, `,"usd":`...)
	b = jsonw.AppendFloat(b, u.USD)
	if u.UsageUnknown != 0 {
		b = append(b, `,"usage_unknown":`...)
		b = jsonw.AppendInt(b, u.UsageUnknown)
	}
	b = append(b, `},"latency_ms":`...)
	b = jsonw.AppendFloat(b, m.LatencyMS)
	if m.Fuel != 0 {
		b = append(b, `,"fuel":`...)
		b = strconv.AppendUint(b, m.Fuel, 10)
	}
	b = abijson.AppendOptString(b, `,"aggregate":`, m.Aggregate)
	return append(b, '}'), true
}

// marshalForm reports whether json.Marshal writes raw, a json.RawMessage,
// as it is: empty (omitted), or in jsonw.MarshalForm. A plugin's details
// arrive in that form when its kind was encoded by encoding/json or the
// SDKs' encoders; anything else is Marshal's to compact.
func marshalForm(raw []byte) bool { return len(raw) == 0 || jsonw.MarshalForm(raw) }

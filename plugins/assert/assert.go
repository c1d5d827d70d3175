// Package assert provides Anvil's deterministic metric kinds: checks whose
// score is a pure function of the case and the params, with no judge call.
//
//   - On actual_output, 0 or 1: "contains", "icontains" (params value),
//     "contains_all", "contains_any" (values), "starts_with" (value),
//     "equals" (value, or expected_output), "regex" (pattern, RE2),
//     "is_json" (optional required_keys), "json_correctness" (schema, a
//     JSON Schema).
//   - "levenshtein": 1 − d/max(len) in [0,1], d the edit distance in
//     characters between actual_output and value (or expected_output).
//   - "tool_correctness": DeepEval's ToolCorrectnessMetric over
//     tools_called and expected_tools — names, optionally input parameters
//     and output, unordered (best match per expected tool), ordered
//     (weighted longest common subsequence) or exact.
//
// docs/metrics.md has each kind's formula, params and what differs from
// DeepEval (and promptfoo, whose assertion names these are).
//
// Invariants: no kind asks for a capability, so none reaches a judge, the
// network, the filesystem or a clock, and the same case and params give
// the same result on every transport. Params are checked when a run
// starts (each kind has a Prepare that does nothing else: the host's
// config check runs a kind's Prepare), so a bad pattern or schema is a
// config error naming the metric and field before any case runs. Work
// per case is bounded by the input (see textmatch for the pattern and
// Levenshtein bounds, maxTools for tool lists).
package assert

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Names and version of the plugin and its kinds.
const (
	PluginName = "assert"
	Version    = "1.0.0"

	KindContains        = "contains"
	KindIContains       = "icontains"
	KindContainsAll     = "contains_all"
	KindContainsAny     = "contains_any"
	KindStartsWith      = "starts_with"
	KindEquals          = "equals"
	KindRegex           = "regex"
	KindIsJSON          = "is_json"
	KindJSONCorrectness = "json_correctness"
	KindLevenshtein     = "levenshtein"
	KindToolCorrectness = "tool_correctness"
)

// Plugin returns the assert plugin, for linking into the host or serving
// from a Wasm module. Each call builds its kinds anew (with their own
// compiled-pattern caches).
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:    PluginName,
		Version: Version,
		Kinds: []sdk.Kind{
			ContainsKind(), IContainsKind(), ContainsAllKind(), ContainsAnyKind(),
			StartsWithKind(), EqualsKind(), RegexKind(), IsJSONKind(),
			JSONCorrectnessKind(), LevenshteinKind(), ToolCorrectnessKind(),
		},
	}
}

// checkOnly is every kind's Prepare: the SDK decodes and validates the
// params before calling it, which is the whole point — the host runs a
// kind's Prepare when it checks a config, before any case.
func checkOnly[C any](context.Context, sdk.Host, *C, *abi.PrepareRequest) (*abi.PrepareResult, error) {
	return &abi.PrepareResult{}, nil
}

// invalid is an invalid_config naming the params field.
func invalid(field, msg string) *abi.Error {
	return &abi.Error{Code: abi.CodeInvalidConfig, Field: field, Message: field + " " + msg}
}

// result is a kind's result: the score, the host's threshold (1 under
// strict_mode, as DeepEval forces it), the reason and the details.
func result(req *abi.MeasureRequest, score float64, strict bool, reason string, details any) (*abi.MeasureResult, error) {
	threshold := req.Threshold
	if strict {
		threshold = 1
	}
	res := &abi.MeasureResult{Score: &score, Success: score >= threshold, Threshold: threshold, Reason: reason}
	if details != nil {
		b, err := json.Marshal(details)
		if err != nil {
			return nil, err
		}
		res.Details = b
	}
	return res, nil
}

// binaryScore is 1 for true, 0 for false.
func binaryScore(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// formatScore prints a score with at most 4 significant digits: 0.75, 0.6667, 1.
func formatScore(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// compiled caches what a kind built from one params value (a regexp, a
// schema): every case of a metric sends the same params, and the SDK
// hands Measure a decoded config, not the compiled form. One entry per
// kind: a run has few metrics of a kind, and a miss only recompiles.
type compiled[T any] struct {
	last atomic.Pointer[compiledEntry[T]]
}

type compiledEntry[T any] struct {
	key string
	val T
}

// get returns the value built from key, building it on a miss.
func (c *compiled[T]) get(key string, build func(string) (T, error)) (T, error) {
	if e := c.last.Load(); e != nil && e.key == key {
		return e.val, nil
	}
	v, err := build(key)
	if err != nil {
		return v, err
	}
	c.last.Store(&compiledEntry[T]{key: key, val: v})
	return v, nil
}

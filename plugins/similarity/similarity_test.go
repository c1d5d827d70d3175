package similarity_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
	"github.com/agentanvil/anvil/plugins/similarity"
	"github.com/agentanvil/anvil/sdk"
)

// Cosines worked by hand.
func TestCosine(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want float64
		err  string
	}{
		{"identical", []float64{3, 4}, []float64{3, 4}, 1, ""},
		{"scaled", []float64{1, 2, 3}, []float64{2, 4, 6}, 1, ""},
		{"45 degrees", []float64{1, 0}, []float64{1, 1}, 1 / math.Sqrt2, ""},
		{"orthogonal", []float64{1, 0}, []float64{0, 5}, 0, ""},
		{"opposite", []float64{1, -2}, []float64{-1, 2}, -1, ""},
		// (1·4 + 2·5 + 3·6) / (√14 · √77) = 32 / √1078
		{"3-d", []float64{1, 2, 3}, []float64{4, 5, 6}, 32 / math.Sqrt(1078), ""},
		{"lengths differ", []float64{1, 0}, []float64{1, 0, 0}, 0, "2 and 3 dimensions"},
		{"empty", nil, []float64{1}, 0, "empty"},
		{"zero vector", []float64{0, 0}, []float64{1, 0}, 0, "zero vector"},
		{"overflow", []float64{math.MaxFloat64, math.MaxFloat64}, []float64{1, 1}, 0, "not finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := similarity.Cosine(tc.a, tc.b)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Cosine = %v, %v; want an error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || math.Abs(got-tc.want) > 1e-15 {
				t.Fatalf("Cosine = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// host embeds by a table, counting requests.
type host struct {
	vectors  map[string][]float64
	requests [][]string
	err      error
}

func (h *host) Judge(context.Context, []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	panic("similarity must not judge")
}
func (h *host) Log(context.Context, slog.Level, string, ...any) {}
func (h *host) Embed(_ context.Context, req abi.EmbedRequest) ([][]float64, error) {
	h.requests = append(h.requests, req.Texts)
	if h.err != nil {
		return nil, h.err
	}
	out := make([][]float64, len(req.Texts))
	for i, t := range req.Texts {
		out[i] = h.vectors[t]
	}
	return out, nil
}

func measure(t *testing.T, h sdk.Host, config string, c abi.TestCase) *abi.MeasureResult {
	t.Helper()
	req := &abi.MeasureRequest{Kind: similarity.Kind, Metric: "sim", Config: json.RawMessage(config), Threshold: 0.5, Case: c}
	return similarity.Plugin().Measure(context.Background(), h, req)
}

func TestMeasure(t *testing.T) {
	vectors := map[string][]float64{"a": {1, 0}, "b": {1, 1}, "c": {-1, 0}, "d": {0, 0}, "e": {1, 0, 0}}
	for _, tc := range []struct {
		name, config       string
		c                  abi.TestCase
		score              float64
		pass               bool
		code               abi.Code
		reason             string
		requests           int
		cosine, formulaHas string
	}{
		{name: "expected_output", config: `{}`, c: abi.TestCase{ActualOutput: "a", ExpectedOutput: "b"},
			score: 1 / math.Sqrt2, pass: true, reason: "actual_output and expected_output: 0.7071", requests: 1},
		{name: "value over expected_output", config: `{"value":"a"}`, c: abi.TestCase{ActualOutput: "a", ExpectedOutput: "b"},
			score: 1, pass: true, reason: "actual_output and value: 1", requests: 1},
		{name: "negative clipped", config: `{"value":"c"}`, c: abi.TestCase{ActualOutput: "a"},
			score: 0, reason: "-1 (negative: scored 0)", requests: 1},
		{name: "empty texts are missing", config: `{"value":"a"}`, c: abi.TestCase{ActualOutput: ""},
			code: abi.CodeMissingField},
		{name: "no expected_output", config: `{}`, c: abi.TestCase{ActualOutput: "a"}, code: abi.CodeMissingField},
		{name: "zero vector", config: `{"value":"d"}`, c: abi.TestCase{ActualOutput: "a"}, code: abi.CodeMetric, reason: "zero vector", requests: 1},
		{name: "dimensions differ", config: `{"value":"e"}`, c: abi.TestCase{ActualOutput: "a"}, code: abi.CodeMetric, reason: "2 and 3 dimensions", requests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &host{vectors: vectors}
			res := measure(t, h, tc.config, tc.c)
			if len(h.requests) != tc.requests {
				t.Errorf("%d embed requests; want %d", len(h.requests), tc.requests)
			}
			if tc.code != "" {
				if res.Error == nil || res.Error.Code != tc.code || !strings.Contains(res.Error.Message, tc.reason) {
					t.Fatalf("result %+v error %+v; want %s %q", res, res.Error, tc.code, tc.reason)
				}
				return
			}
			if res.Error != nil || res.Score == nil || math.Abs(*res.Score-tc.score) > 1e-15 || res.Success != tc.pass {
				t.Fatalf("result %+v error %+v; want score %v pass %v", res, res.Error, tc.score, tc.pass)
			}
			if !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("reason %q; want it to contain %q", res.Reason, tc.reason)
			}
			var d similarity.Details
			if err := json.Unmarshal(res.Details, &d); err != nil || d.Cosine == nil || d.Dimensions != 2 {
				t.Errorf("details %s (%v)", res.Details, err)
			}
		})
	}
}

// The host's refusal is the metric's error, code intact; a host without
// Embed says so.
func TestMeasureHostErrors(t *testing.T) {
	res := measure(t, &host{err: abi.Errorf(abi.CodeBudget, "judge-call budget")}, `{"value":"a"}`, abi.TestCase{ActualOutput: "b"})
	if res.Error == nil || res.Error.Code != abi.CodeBudget {
		t.Errorf("budget: %+v", res.Error)
	}
	// scripted.Host has no Embed: a host of ABI 1.4 or older.
	res = measure(t, &scripted.Host{}, `{"value":"a"}`, abi.TestCase{ActualOutput: "b"})
	if res.Error == nil || res.Error.Code != abi.CodeCapability || !strings.Contains(res.Error.Message, "ABI minor 5") {
		t.Errorf("old host: %+v", res.Error)
	}
}

// The plugin asks for the judge capability, and only it.
func TestDescriptor(t *testing.T) {
	d := similarity.Plugin().Describe()
	if len(d.Capabilities) != 1 || d.Capabilities[0] != abi.CapJudge || d.ABIMinor != abi.Minor || len(d.Kinds) != 1 || d.Kinds[0].Name != "similarity" {
		t.Errorf("descriptor %+v", d)
	}
}

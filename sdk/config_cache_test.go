package sdk

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// TestConfigReuseIsInvisible: a metric's config decoded once and handed
// out again behaves exactly like one decoded per call — a kind that
// changes its config does not see the change on the next call, another
// config is decoded anew, and a config holding references is never
// reused.
func TestConfigReuseIsInvisible(t *testing.T) {
	type flat struct {
		N    int    `json:"n"`
		Name string `json:"name"`
	}
	type withSlice struct {
		Items []string `json:"items"`
	}
	var seen []string
	flatKind := &MetricKind[flat]{Name: "flat", Measure: func(_ context.Context, _ Host, cfg *flat, _ *abi.MeasureRequest) (*abi.MeasureResult, error) {
		seen = append(seen, cfg.Name)
		cfg.Name = "changed by the kind"
		score := float64(cfg.N)
		return &abi.MeasureResult{Score: &score}, nil
	}}
	sliceKind := &MetricKind[withSlice]{Name: "slice", Measure: func(_ context.Context, _ Host, cfg *withSlice, _ *abi.MeasureRequest) (*abi.MeasureResult, error) {
		seen = append(seen, cfg.Items[0])
		cfg.Items[0] = "changed by the kind"
		score := 1.0
		return &abi.MeasureResult{Score: &score}, nil
	}}
	p := &Plugin{Name: "p", Version: "1", Kinds: []Kind{flatKind, sliceKind}}
	for _, tc := range []struct {
		kind, config string
		want         string
	}{
		{"flat", `{"n":1,"name":"a"}`, "a"},
		{"flat", `{"n":1,"name":"a"}`, "a"},
		{"flat", `{"n":0,"name":"b"}`, "b"},
		{"flat", `{"n":1,"name":"a"}`, "a"},
		{"slice", `{"items":["x"]}`, "x"},
		{"slice", `{"items":["x"]}`, "x"},
	} {
		seen = nil
		res := p.Measure(context.Background(), nil, &abi.MeasureRequest{Kind: tc.kind, Config: json.RawMessage(tc.config)})
		if res.Error != nil {
			t.Fatalf("%s %s: %v", tc.kind, tc.config, res.Error)
		}
		if len(seen) != 1 || seen[0] != tc.want {
			t.Fatalf("%s %s: the kind saw %q, want %q", tc.kind, tc.config, seen, tc.want)
		}
	}
	if flatKind.lastConfig.Load() == nil {
		t.Error("a flat config was not kept")
	}
	if sliceKind.lastConfig.Load() != nil {
		t.Error("a config holding a slice was kept")
	}
}

package sdk

import (
	"context"
	"encoding/json"
	"reflect"
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
	if sliceKind.lastConfig.Load() == nil {
		t.Error("a config holding a slice was not kept (it is copied deeply)")
	}
}

// A config with references — G-Eval's: slices, pointers, slices of
// structs, and maps — is kept and handed out as a deep copy: whatever the
// kind changes in one call's config, the next call sees the config as
// decoded; one holding an interface is decoded per call.
func TestConfigReuseCopiesReferences(t *testing.T) {
	type band struct {
		Range []int  `json:"range"`
		Text  string `json:"text"`
	}
	type deep struct {
		Steps  []string          `json:"steps"`
		Bands  []band            `json:"bands"`
		Top    *int              `json:"top"`
		Reason *bool             `json:"reason"`
		Labels map[string][]int  `json:"labels"`
		Pair   [2]*int           `json:"pair"`
		Empty  []string          `json:"empty"`
		Nil    []string          `json:"nil"`
		Raw    map[string]string `json:"raw"`
	}
	type withAny struct {
		X any `json:"x"`
	}
	const raw = `{"steps":["a","b"],"bands":[{"range":[0,5],"text":"low"}],"top":20,"reason":true,"labels":{"k":[1,2]},"pair":[3,null],"empty":[],"nil":null,"raw":{}}`
	var first deep
	if err := json.Unmarshal([]byte(raw), &first); err != nil {
		t.Fatal(err)
	}
	calls := 0
	deepKind := &MetricKind[deep]{Name: "deep", Measure: func(_ context.Context, _ Host, cfg *deep, _ *abi.MeasureRequest) (*abi.MeasureResult, error) {
		calls++
		if !reflect.DeepEqual(*cfg, first) {
			t.Errorf("call %d: config %+v; want it as decoded, %+v", calls, *cfg, first)
		}
		// Change everything reachable.
		cfg.Steps[0], cfg.Bands[0].Range[0], cfg.Bands[0].Text = "changed", 9, "changed"
		*cfg.Top, *cfg.Reason, *cfg.Pair[0] = 1, false, 7
		cfg.Labels["k"][0], cfg.Labels["new"] = 9, nil
		cfg.Empty = append(cfg.Empty, "x")
		cfg.Raw["x"] = "y"
		score := 1.0
		return &abi.MeasureResult{Score: &score}, nil
	}}
	anyKind := &MetricKind[withAny]{Name: "any", Measure: func(_ context.Context, _ Host, cfg *withAny, _ *abi.MeasureRequest) (*abi.MeasureResult, error) {
		score := 1.0
		return &abi.MeasureResult{Score: &score}, nil
	}}
	p := &Plugin{Name: "p", Version: "1", Kinds: []Kind{deepKind, anyKind}}
	for range 3 {
		if res := p.Measure(context.Background(), nil, &abi.MeasureRequest{Kind: "deep", Config: json.RawMessage(raw)}); res.Error != nil {
			t.Fatal(res.Error)
		}
		if res := p.Measure(context.Background(), nil, &abi.MeasureRequest{Kind: "any", Config: json.RawMessage(`{"x":[1]}`)}); res.Error != nil {
			t.Fatal(res.Error)
		}
	}
	if calls != 3 {
		t.Fatalf("%d calls", calls)
	}
	if deepKind.lastConfig.Load() == nil {
		t.Error("a config of slices, pointers and maps was not kept")
	}
	if anyKind.lastConfig.Load() != nil {
		t.Error("a config holding an interface was kept")
	}
}

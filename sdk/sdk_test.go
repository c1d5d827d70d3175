package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

type matchConfig struct {
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	Field      string `json:"field,omitempty" jsonschema:"enum=actual_output,enum=input"`
}

type noHost struct{}

func (noHost) Judge(context.Context, []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	return nil, abi.Errorf(abi.CodeCapability, "no judge here")
}
func (noHost) Log(context.Context, slog.Level, string, ...any) {}

func testPlugin() *sdk.Plugin {
	one := 1.0
	return &sdk.Plugin{Name: "t", Version: "1.0.0", Kinds: []sdk.Kind{
		&sdk.MetricKind[matchConfig]{
			Name:           "same",
			RequiredFields: []string{abi.FieldActualOutput},
			Fields: func(c *matchConfig) []string {
				if c.Field != "" {
					return []string{c.Field}
				}
				return nil
			},
			Validate: func(c *matchConfig) error {
				if c.Field == "input" && c.IgnoreCase {
					return errors.New("ignore_case makes no sense on input here")
				}
				return nil
			},
			Measure: func(_ context.Context, _ sdk.Host, c *matchConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
				if req.Case.ActualOutput == "boom" {
					return nil, errors.New("cannot score boom")
				}
				if req.Case.ActualOutput == "judge" {
					return nil, abi.Errorf(abi.CodeJudge, "judge down")
				}
				return &abi.MeasureResult{Score: &one, Success: true, Threshold: req.Threshold}, nil
			},
		},
		&sdk.NodeKind[matchConfig]{
			Name:     "same",
			Verdicts: []string{"false", "true"},
			Run: func(_ context.Context, _ sdk.Host, _ *matchConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
				return &abi.NodeResult{Verdict: req.Case.ActualOutput}, nil
			},
		},
	}}
}

func TestMeasure(t *testing.T) {
	p := testPlugin()
	tests := []struct {
		name      string
		kind      string
		config    string
		output    string
		wantCode  abi.Code
		wantField string
		wantMsg   string
	}{
		{name: "scores", kind: "same", output: "x"},
		{name: "unknown config field", kind: "same", config: `{"ignore_cas": true}`, output: "x", wantCode: abi.CodeInvalidConfig, wantField: "ignore_cas", wantMsg: "ignore_cas"},
		{name: "wrong config type", kind: "same", config: `{"ignore_case": "yes"}`, output: "x", wantCode: abi.CodeInvalidConfig, wantField: "ignore_case"},
		{name: "validate", kind: "same", config: `{"field": "input", "ignore_case": true}`, output: "x", wantCode: abi.CodeInvalidConfig, wantMsg: "makes no sense"},
		{name: "missing required field", kind: "same", output: "", wantCode: abi.CodeMissingField, wantField: "actual_output"},
		{name: "missing config-dependent field", kind: "same", config: `{"field": "input"}`, output: "x", wantCode: abi.CodeMissingField, wantField: "input"},
		{name: "plain error is a metric error", kind: "same", output: "boom", wantCode: abi.CodeMetric, wantMsg: "cannot score boom"},
		{name: "typed error keeps its code", kind: "same", output: "judge", wantCode: abi.CodeJudge},
		{name: "unknown kind", kind: "nope", output: "x", wantCode: abi.CodeABI, wantMsg: `no kind "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := p.Measure(context.Background(), noHost{}, &abi.MeasureRequest{
				Kind: tt.kind, Config: json.RawMessage(tt.config), Threshold: 0.5,
				Case: abi.TestCase{ID: "c", ActualOutput: tt.output},
			})
			if tt.wantCode == "" {
				if res.Error != nil || res.Score == nil || *res.Score != 1 {
					t.Fatalf("result = %+v, want score 1", res)
				}
				return
			}
			if res.Error == nil {
				t.Fatalf("no error, want %s", tt.wantCode)
			}
			if res.Error.Code != tt.wantCode || res.Error.Field != tt.wantField || !strings.Contains(res.Error.Message, tt.wantMsg) {
				t.Fatalf("error = %+v, want code %s field %q message ~%q", res.Error, tt.wantCode, tt.wantField, tt.wantMsg)
			}
			if res.Threshold != 0.5 {
				t.Errorf("threshold = %v, want the request's 0.5 carried on errors", res.Threshold)
			}
		})
	}
}

func TestMetricAndNodeKindsMayShareAName(t *testing.T) {
	p := testPlugin()
	res := p.Node(context.Background(), noHost{}, &abi.NodeRequest{Kind: "same", NodeID: "n", Verdicts: []string{"false", "true"},
		Case: abi.TestCase{ActualOutput: "true"}})
	if res.Error != nil || res.Verdict != "true" {
		t.Fatalf("node = %+v", res)
	}
	res = p.Node(context.Background(), noHost{}, &abi.NodeRequest{Kind: "same", NodeID: "n", Verdicts: []string{"false", "true"},
		Case: abi.TestCase{ActualOutput: "maybe"}})
	if res.Error == nil || !strings.Contains(res.Error.Message, `"maybe" is not one of`) {
		t.Fatalf("verdict outside the offered set: %+v", res)
	}
	if r := p.Prepare(context.Background(), noHost{}, &abi.PrepareRequest{Kind: "same"}); r.Error != nil {
		t.Fatalf("prepare of a kind without Prepare = %+v, want empty", r)
	}
}

func TestDescribe(t *testing.T) {
	d := testPlugin().Describe()
	if d.ABIMajor != abi.Major || d.ABIMinor != abi.Minor || len(d.Kinds) != 2 {
		t.Fatalf("descriptor = %+v", d)
	}
	m, ok := d.KindOf("same", abi.RoleMetric)
	if !ok || m.Prepare || len(m.RequiredFields) != 1 {
		t.Fatalf("metric kind = %+v", m)
	}
	var schema struct {
		Type                 string         `json:"type"`
		AdditionalProperties *bool          `json:"additionalProperties"`
		Properties           map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(m.ConfigSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties || len(schema.Properties) != 2 {
		t.Fatalf("config schema = %s", m.ConfigSchema)
	}
	n, _ := d.KindOf("same", abi.RoleNode)
	if strings.Join(n.Verdicts, ",") != "false,true" {
		t.Fatalf("node verdicts = %v", n.Verdicts)
	}
}

func ExampleDecodeConfig() {
	_, err := sdk.DecodeConfig[matchConfig]([]byte(`{"ignore_case": 1}`))
	fmt.Println(err.Code, err.Field)
	cfg, _ := sdk.DecodeConfig[matchConfig]([]byte(`{"field": "input"}`))
	fmt.Println(cfg.Field, cfg.IgnoreCase)
	// Output:
	// invalid_config ignore_case
	// input false
}

func TestLevelNameAndAttrMap(t *testing.T) {
	for l, want := range map[slog.Level]string{slog.LevelDebug - 4: "debug", slog.LevelInfo: "info", slog.LevelInfo + 2: "info",
		slog.LevelWarn: "warn", slog.LevelError + 8: "error"} {
		if got := sdk.LevelName(l); got != want {
			t.Errorf("LevelName(%v) = %q, want %q", l, got, want)
		}
	}
	m := sdk.AttrMap("a", 1, slog.String("b", "x"), "dangling")
	if m["a"] != 1 || m["b"] != "x" || m["!BADKEY"] != "dangling" || len(m) != 3 {
		t.Fatalf("AttrMap = %v", m)
	}
}

func TestJudgeOneKeepsTheHostsErrorCode(t *testing.T) {
	_, err := sdk.JudgeOne(context.Background(), noHost{}, abi.JudgeRequest{})
	if err == nil || err.Code != abi.CodeCapability {
		t.Fatalf("err = %v, want capability_denied", err)
	}
}

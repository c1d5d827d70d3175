//go:build wasip1

// Command judge is an honest guest that uses the judge capability: the
// metric kind "ask" sends its configured prompts to the host's judge in
// batches and reports the replies.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
	"github.com/agentanvil/anvil/sdk/guest"
)

type config struct {
	Prompts []string `json:"prompts" jsonschema:"required"`
	Batch   int      `json:"batch,omitempty"`
	System  string   `json:"system,omitempty"`
}

type state struct {
	System string `json:"system"`
}

func prepare(_ context.Context, h sdk.Host, cfg *config, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	b, _ := json.Marshal(state{System: strings.ToUpper(cfg.System)})
	return &abi.PrepareResult{State: b}, nil
}

func measure(ctx context.Context, h sdk.Host, cfg *config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	var st state
	if len(req.Prepared) > 0 {
		if err := json.Unmarshal(req.Prepared, &st); err != nil {
			return nil, err
		}
	}
	batch := max(cfg.Batch, 1)
	var contents []string
	calls := 0
	for i := 0; i < len(cfg.Prompts); i += batch {
		var reqs []abi.JudgeRequest
		for _, p := range cfg.Prompts[i:min(i+batch, len(cfg.Prompts))] {
			msgs := []abi.Message{{Role: "user", Content: p + " / " + req.Case.Input}}
			if st.System != "" {
				msgs = append([]abi.Message{{Role: "system", Content: st.System}}, msgs...)
			}
			reqs = append(reqs, abi.JudgeRequest{Messages: msgs, Purpose: "ask"})
		}
		resps, err := h.Judge(ctx, reqs)
		if err != nil {
			return nil, err
		}
		calls++
		for _, r := range resps {
			if r.Error != nil {
				return nil, r.Error
			}
			contents = append(contents, r.Content)
		}
	}
	h.Log(ctx, slog.LevelInfo, "asked", "case", req.Case.ID, "batches", calls)
	score := 1.0
	details, _ := json.Marshal(map[string]any{"contents": contents, "batches": calls})
	return &abi.MeasureResult{Score: &score, Success: true, Threshold: req.Threshold,
		Reason: strings.Join(contents, "; "), Details: details}, nil
}

func init() {
	guest.Serve(&sdk.Plugin{
		Name:         "judge",
		Version:      "0.1.0",
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds: []sdk.Kind{&sdk.MetricKind[config]{
			Name:           "ask",
			RequiredFields: []string{abi.FieldInput},
			Prepare:        prepare,
			Measure:        measure,
		}},
	})
}

func main() {}

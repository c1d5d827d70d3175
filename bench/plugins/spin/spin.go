// Package spin is a deliberately CPU-heavy metric plugin for benchmarks
// (bench/cluster.sh): its one kind, spin, hashes the case's actual_output
// `rounds` times with SHA-256 and scores the first byte of the result.
// Deterministic and judge-free: its cost is pure Wasm CPU, so it shows
// how evaluation scales with worker processes.
package spin

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Config is the spin kind's params.
type Config struct {
	Rounds int `json:"rounds" jsonschema:"description=SHA-256 rounds per case,minimum=1"`
}

// Plugin returns the spin plugin.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{Name: "spin", Version: "1.0.0", Kinds: []sdk.Kind{&sdk.MetricKind[Config]{
		Name:           "spin",
		Description:    "burns CPU: SHA-256 of actual_output, rounds times; scores the first byte",
		RequiredFields: []string{abi.FieldActualOutput},
		Measure: func(_ context.Context, _ sdk.Host, cfg *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			sum := sha256.Sum256([]byte(req.Case.ActualOutput))
			for range max(cfg.Rounds, 1) - 1 {
				sum = sha256.Sum256(sum[:])
			}
			score := float64(sum[0]) / 255
			return &abi.MeasureResult{Score: &score, Success: score >= req.Threshold,
				Reason: fmt.Sprintf("%d rounds, first byte %d", max(cfg.Rounds, 1), sum[0])}, nil
		},
	}}}
}

package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// TestGarbageResults: a guest that breaks the ABI at call time gets an
// abi_violation naming it, loses its instance, and is served again.
func TestGarbageResults(t *testing.T) {
	ctx := context.Background()
	p := load(t, "garbage", transport.Options{Limits: transport.Limits{PoolSize: 1}})
	w := p.(*wasmPlugin)
	measure := func(kind string) error {
		res, err := p.Measure(ctx, nil, &abi.MeasureRequest{Kind: kind, Case: abi.TestCase{ID: kind}})
		if err == nil && (res.Score == nil || *res.Score != 1) {
			t.Fatalf("unexpected result %s", plugintest.MustJSON(t, res))
		}
		return err
	}
	node := func(verdicts []string) func(string) error {
		return func(string) error {
			res, err := p.Node(ctx, nil, &abi.NodeRequest{Kind: "badverdict", NodeID: "n", Verdicts: verdicts, Case: abi.TestCase{ID: "n"}})
			if err == nil && res.Verdict != "maybe" {
				t.Fatalf("unexpected result %s", plugintest.MustJSON(t, res))
			}
			return err
		}
	}
	for _, tc := range []struct {
		kind string
		call func(string) error
		want string // "" = no error
	}{
		{"notjson", measure, "anvil_measure result: not JSON"},
		{"seterror", measure, "garbage: cannot make sense of this"},
		{"status", measure, "returned status 7 without an error message"},
		{"noscore", measure, "neither score nor error"},
		{"badscore", measure, "score 7 is outside [0,1]"},
		{"array", measure, "want a JSON object"},
		{"dupkey", measure, `duplicate key "score" at /score`},
		{"dupcase", measure, `duplicate key "Score" at /Score: another differs from it only in case`},
		{"dupnested", measure, `duplicate key "a" at /details/steps/0/a`},
		{"bignum", measure, "number 1e400 at /details/n does not fit a float64"},
		{"badthreshold", measure, "threshold 7 is outside [0,1]"},
		{"negscore", measure, "score -1e-07 is outside [0,1]"},
		{"verdict out of set", node([]string{"false", "true"}), `verdict "maybe" is not one of`},
		{"verdict free", node(nil), ""},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			before := w.instances.Load()
			err := tc.call(tc.kind)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != abi.CodeABI || ae.Plugin != "garbage@1.0.0" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want abi_violation %q from garbage@1.0.0, got %v", tc.want, err)
			}
			if err := measure("ok"); err != nil {
				t.Fatalf("not served after %s: %v", tc.kind, err)
			}
			if created := w.instances.Load() - before; created != 1 {
				t.Errorf("%d instances created, want 1 (the violating one replaced)", created)
			}
		})
	}
}

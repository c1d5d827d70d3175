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

// TestForeignGuests covers what a guest in another language runs into:
// AssemblyScript's env.abort, an error_set before a trap, per-kind
// capabilities (ABI minor 1) and imports the host does not provide.
func TestForeignGuests(t *testing.T) {
	ctx := context.Background()
	p := load(t, "foreign", transport.Options{Grants: transport.Grants{Judge: true}})
	measure := func(kind string, svc transport.Services) (*abi.MeasureResult, error) {
		return p.Measure(ctx, svc, &abi.MeasureRequest{Kind: kind, Metric: "m", Threshold: 0.5, Case: abi.TestCase{ID: "c1"}})
	}
	trap := func(t *testing.T, kind, want string) {
		t.Helper()
		_, err := measure(kind, &plugintest.FakeServices{})
		var ae *abi.Error
		if !errors.As(err, &ae) || ae.Code != abi.CodeTrap || !strings.Contains(ae.Message, want) {
			t.Fatalf("want a trap saying %q, got %v", want, err)
		}
		// The instance was discarded; the next call is served.
		res, err := measure("judged", &plugintest.FakeServices{})
		if err != nil || res.Score == nil {
			t.Fatalf("call after the trap: %+v, %v", res, err)
		}
	}

	t.Run("env.abort traps with the guest's message", func(t *testing.T) {
		trap(t, "abort", "guest aborted (env.abort): keyword list is empty — ünïcode at assembly/index.ts:12:5")
	})
	t.Run("error_set before a trap is on the trap", func(t *testing.T) {
		trap(t, "errtrap", "the guest's error (error_set) before it: foreign: config.keywords[0] is not a string")
	})
	t.Run("capabilities per kind", func(t *testing.T) {
		if d := p.Info().Descriptor; d.ABIMinor != 1 || d.KindAsks(d.Kinds[3], abi.CapJudge) || !d.KindAsks(d.Kinds[2], abi.CapJudge) {
			t.Fatalf("descriptor %+v", d)
		}
		svc := &plugintest.FakeServices{}
		res, err := measure("judged", svc)
		if err != nil || res.Score == nil || *res.Score != 1 || svc.Calls.Load() != 1 {
			t.Fatalf("judged: %+v, %v, %d judge calls; want score 1 after one call", res, err, svc.Calls.Load())
		}
		res, err = measure("judge_free", svc)
		if err != nil || res.Error == nil || res.Error.Code != abi.CodeCapability ||
			!strings.Contains(res.Error.Message, `kind "judge_free" does not ask for it`) {
			t.Fatalf("judge_free: %+v, %v; want capability_denied naming the kind", res, err)
		}
		if svc.Calls.Load() != 1 {
			t.Fatalf("%d judge calls reached the judge; want 1", svc.Calls.Load())
		}
	})
	t.Run("unknown imports are named at load", func(t *testing.T) {
		_, err := testRT.Load(ctx, plugintest.GuestPath("badimport"), plugintest.GuestDigest(t, "badimport"), transport.Options{})
		for _, want := range []string{`module "acme" function "thing"`, `module "env" function "seed"`,
			"not provided by the host", "extism:host/env (the Extism kernel)", "wasi_snapshot_preview1", "env.abort"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("want an error containing %q, got %v", want, err)
			}
		}
	})
}

// TestDescriptorKindCapabilities checks the load-time rules of per-kind
// capabilities.
func TestDescriptorKindCapabilities(t *testing.T) {
	exports := map[string]bool{abi.ExportMeasure: true}
	d := abi.Descriptor{Name: "x", Version: "1", ABIMajor: 1, ABIMinor: 1, Kinds: []abi.KindDescriptor{
		{Name: "a", Role: abi.RoleMetric, Capabilities: []abi.Capability{abi.CapJudge}},
	}}
	err := transport.CheckDescriptor(&d, exports)
	if err == nil || !strings.Contains(err.Error(), `asks for capability "judge", which the plugin's capabilities [] lack`) {
		t.Fatalf("a kind asking beyond the plugin: %v", err)
	}
	d.Capabilities = []abi.Capability{abi.CapJudge}
	if err := transport.CheckDescriptor(&d, exports); err != nil {
		t.Fatalf("valid: %v", err)
	}
	d.ABIMinor = 0
	if err := transport.CheckDescriptor(&d, exports); err == nil || !strings.Contains(err.Error(), "capabilities per kind need abi_minor >= 1") {
		t.Fatalf("minor 0 with per-kind capabilities: %v", err)
	}
}

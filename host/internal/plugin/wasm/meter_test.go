package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/host/internal/wasmtest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// fuelServices records the fuel of each invocation, as the engine does.
type fuelServices struct {
	plugintest.FakeServices
	fuel []uint64
}

func (s *fuelServices) RecordFuel(n uint64) { s.fuel = append(s.fuel, n) }

// TestMaxFuel: fuel is the same for the same call on every run, a call is
// stopped with fuel_exhausted once it spends max_fuel (not by its deadline,
// which is far away), and the instance that ran out is replaced.
func TestMaxFuel(t *testing.T) {
	ctx := context.Background()
	long := transport.Limits{Timeout: duration.Duration(time.Minute), PoolSize: 1}

	// Fuel counts what the guest did, so the same call on the same state
	// costs the same: the first call of two fresh instances. (A Go guest's
	// later calls find its heap in another state, and may cost more or less.)
	var first []uint64
	for range 2 {
		svc := &fuelServices{}
		p := load(t, "hostile", transport.Options{Limits: long})
		if _, err := p.Measure(ctx, svc, plugintest.HostileRequest("c", map[string]any{"behaviour": "echo"})); err != nil {
			t.Fatal(err)
		}
		if len(svc.fuel) != 1 || svc.fuel[0] == 0 {
			t.Fatalf("fuel recorded: %v, want one non-zero value", svc.fuel)
		}
		first = append(first, svc.fuel[0])
	}
	if first[0] != first[1] {
		t.Errorf("the same first call spent %d then %d fuel: not deterministic", first[0], first[1])
	}
	echo := first[0]

	tight := long
	tight.MaxFuel = echo / 2
	capped := load(t, "hostile", transport.Options{Limits: tight})
	_, err := capped.Measure(ctx, &fuelServices{}, plugintest.HostileRequest("c", map[string]any{"behaviour": "echo"}))
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeFuelExhausted {
		t.Fatalf("echo under max_fuel %d (it needs %d): %v, want %s", tight.MaxFuel, echo, err, abi.CodeFuelExhausted)
	}

	enough := long
	enough.MaxFuel = 100 * echo
	looping := load(t, "hostile", transport.Options{Limits: enough})
	lsvc := &fuelServices{}
	_, err = looping.Measure(ctx, lsvc, plugintest.HostileRequest("l", map[string]any{"behaviour": "loop"}))
	if !errors.As(err, &ae) || ae.Code != abi.CodeFuelExhausted {
		t.Fatalf("an endless loop under max_fuel %d: %v, want %s", enough.MaxFuel, err, abi.CodeFuelExhausted)
	}
	if len(lsvc.fuel) != 1 || lsvc.fuel[0] <= enough.MaxFuel {
		t.Errorf("the stopped loop recorded fuel %v, want one value over max_fuel %d", lsvc.fuel, enough.MaxFuel)
	}
	before := looping.(*wasmPlugin).instances.Load()
	if _, err := looping.Measure(ctx, lsvc, plugintest.HostileRequest("e", map[string]any{"behaviour": "echo"})); err != nil {
		t.Fatalf("the call after fuel ran out: %v", err)
	}
	if looping.(*wasmPlugin).instances.Load() == before {
		t.Error("the instance that ran out of fuel was kept")
	}
}

// startLoopModule is a plugin whose start function counts down from n
// (n <= 0: forever) while the module is instantiated, before any export.
func startLoopModule(n int32) []byte {
	g := wasmtest.NewGuest()
	body := wasmtest.Code{}.I32(n).Set(0).Op(wasmtest.OpLoop, wasmtest.BlockEmpty)
	if n > 0 {
		body = body.Get(0).I32(1).Op(wasmtest.OpI32Sub).Tee(0).BrIf(0)
	} else {
		body = body.Br(0)
	}
	start := g.M.AddFunc(wasmtest.None, wasmtest.None, wasmtest.I32, body.Op(wasmtest.OpEnd))
	g.M.SetStart(start)
	return g.Finish("start", nil, wasmtest.Code{}, []byte(`{"score":1,"reason":"started"}`))
}

// TestStartFunctionIsMetered: a module's start function runs metered
// while it is instantiated, outside any invocation (AssemblyScript
// modules have one): work long enough to return to the host several
// times loads and serves, and an endless one fails the load at the
// instantiation's deadline.
func TestStartFunctionIsMetered(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		n    int32
		ok   bool
	}{{"long", 3 * meterSlice, true}, {"endless", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				testkit.Long(t, "the load waits for the instantiation's 10 s deadline")
			}
			wasm := startLoopModule(tc.n)
			path := filepath.Join(dir, tc.name+".wasm")
			if err := os.WriteFile(path, wasm, 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := testRT.Load(ctx, path, transport.DigestOf(wasm), transport.Options{Limits: transport.Limits{Timeout: duration.Duration(time.Second), PoolSize: 1}})
			if !tc.ok {
				if err == nil {
					p.Close(ctx)
					t.Fatal("a module whose start function never ends loaded")
				}
				if !strings.Contains(err.Error(), "deadline") {
					t.Errorf("load error %v, want it to name the deadline", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			res, err := p.Measure(ctx, &fuelServices{}, &abi.MeasureRequest{Kind: "shape", Metric: "m", Case: abi.TestCase{ID: "c"}})
			if err != nil || res.Score == nil || *res.Score != 1 {
				t.Fatalf("measure after a metered start: %+v, %v", res, err)
			}
		})
	}
}

package plugin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
)

// fuelServices records the fuel of each invocation, as the engine does.
type fuelServices struct {
	fakeServices
	fuel []uint64
}

func (s *fuelServices) RecordFuel(n uint64) { s.fuel = append(s.fuel, n) }

// TestMaxFuel: fuel is the same for the same call on every run, a call is
// stopped with fuel_exhausted once it spends max_fuel (not by its deadline,
// which is far away), and the instance that ran out is replaced.
func TestMaxFuel(t *testing.T) {
	ctx := context.Background()
	long := Limits{Timeout: duration.Duration(time.Minute), PoolSize: 1}

	// Fuel counts what the guest did, so the same call on the same state
	// costs the same: the first call of two fresh instances. (A Go guest's
	// later calls find its heap in another state, and may cost more or less.)
	var first []uint64
	for range 2 {
		svc := &fuelServices{}
		p := load(t, "hostile", Options{Limits: long})
		if _, err := p.Measure(ctx, svc, hostileRequest("c", map[string]any{"behaviour": "echo"})); err != nil {
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
	capped := load(t, "hostile", Options{Limits: tight})
	_, err := capped.Measure(ctx, &fuelServices{}, hostileRequest("c", map[string]any{"behaviour": "echo"}))
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeFuelExhausted {
		t.Fatalf("echo under max_fuel %d (it needs %d): %v, want %s", tight.MaxFuel, echo, err, abi.CodeFuelExhausted)
	}

	enough := long
	enough.MaxFuel = 100 * echo
	looping := load(t, "hostile", Options{Limits: enough})
	lsvc := &fuelServices{}
	_, err = looping.Measure(ctx, lsvc, hostileRequest("l", map[string]any{"behaviour": "loop"}))
	if !errors.As(err, &ae) || ae.Code != abi.CodeFuelExhausted {
		t.Fatalf("an endless loop under max_fuel %d: %v, want %s", enough.MaxFuel, err, abi.CodeFuelExhausted)
	}
	if len(lsvc.fuel) != 1 || lsvc.fuel[0] <= enough.MaxFuel {
		t.Errorf("the stopped loop recorded fuel %v, want one value over max_fuel %d", lsvc.fuel, enough.MaxFuel)
	}
	before := looping.(*wasmPlugin).instances.Load()
	if _, err := looping.Measure(ctx, lsvc, hostileRequest("e", map[string]any{"behaviour": "echo"})); err != nil {
		t.Fatalf("the call after fuel ran out: %v", err)
	}
	if looping.(*wasmPlugin).instances.Load() == before {
		t.Error("the instance that ran out of fuel was kept")
	}
}

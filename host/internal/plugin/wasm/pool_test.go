package wasm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// TestHammer sends many distinct calls from many goroutines through a
// small pool: every result must be its own input's (a Wasm instance used
// by two calls at once returns corrupt results).
func TestHammer(t *testing.T) {
	const (
		poolSize   = 4
		goroutines = 16
		calls      = 25
	)
	p := load(t, "hostile", transport.Options{Limits: transport.Limits{PoolSize: poolSize, Timeout: duration.Duration(time.Minute)}})
	tc := load(t, "textcheck", transport.Options{Limits: transport.Limits{PoolSize: poolSize, Timeout: duration.Duration(time.Minute)}})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				id := fmt.Sprintf("g%02d-c%03d", g, i)
				res, err := p.Measure(ctx, nil, plugintest.HostileRequest(id, map[string]any{"behaviour": "echo"}))
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					continue
				}
				if want := id + "|in-" + id; res.Reason != want {
					errs <- fmt.Errorf("%s: cross-talk: got %q, want %q", id, res.Reason, want)
				}
				// Half the cases match, half do not: the score must follow.
				expected := id
				if i%2 == 1 {
					expected = id + "x"
				}
				m, err := tc.Measure(ctx, nil, &abi.MeasureRequest{Kind: "exact_match",
					Case: abi.TestCase{ID: id, ActualOutput: id, ExpectedOutput: expected}})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					continue
				}
				if want := float64(1 - i%2); m.Score == nil || *m.Score != want {
					errs <- fmt.Errorf("%s: exact_match score %v, want %v (%s)", id, m.Score, want, m.Reason)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := p.(*wasmPlugin).instances.Load(); n > poolSize {
		t.Errorf("%d instances created for a pool of %d", n, poolSize)
	}
}

// TestPoolBlocksThenServes: with every instance busy a caller waits, and
// gives up when its context ends; once an instance is free it is served.
func TestPoolBlocksThenServes(t *testing.T) {
	p := load(t, "hostile", transport.Options{Grants: transport.Grants{Judge: true}, Limits: transport.Limits{PoolSize: 1}})
	svc, busy := plugintest.Hold(t, context.Background(), p.Measure, "holder", 1) // the only instance is inside a call

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Measure(ctx, nil, plugintest.HostileRequest("waiter", map[string]any{"behaviour": "echo"}))
	var ae *abi.Error
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ae) {
		t.Fatalf("want the waiter's own deadline, got %v", err)
	}

	close(svc.Release)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	res, err := p.Measure(context.Background(), nil, plugintest.HostileRequest("after", map[string]any{"behaviour": "echo"}))
	if err != nil || res.Reason != "after|in-after" {
		t.Fatalf("%v / %v", err, res)
	}
	if n := p.(*wasmPlugin).instances.Load(); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

// TestClosedPlugin: calls after Close fail cleanly.
func TestClosedPlugin(t *testing.T) {
	ctx := context.Background()
	p, err := testRT.Load(ctx, plugintest.GuestPath("garbage"), plugintest.GuestDigest(t, "garbage"), transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Measure(ctx, nil, &abi.MeasureRequest{Kind: "ok"}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
}

// TestPoolSizeCores: a plugin without the judge granted only computes, so
// its pool stops at GOMAXPROCS instances whatever pool_size says; with the
// judge granted (instances wait on replies) pool_size holds.
func TestPoolSizeCores(t *testing.T) {
	cores := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		name   string
		grants transport.Grants
		size   int
		want   int
	}{
		{"no judge, pool_size above the cores", transport.Grants{}, cores + 3, cores},
		{"no judge, pool_size 1", transport.Grants{}, 1, 1},
		{"judge granted", transport.Grants{Judge: true}, cores + 3, cores + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := load(t, "textcheck", transport.Options{Grants: tc.grants, Limits: transport.Limits{PoolSize: tc.size}}).(*wasmPlugin)
			if got := cap(w.pool.slots); got != tc.want {
				t.Errorf("pool of %d instances, want %d (GOMAXPROCS %d, pool_size %d)", got, tc.want, cores, tc.size)
			}
		})
	}
}

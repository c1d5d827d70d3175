package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
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
	p := load(t, "hostile", Options{Limits: Limits{PoolSize: poolSize, Timeout: duration.Duration(time.Minute)}})
	tc := load(t, "textcheck", Options{Limits: Limits{PoolSize: poolSize, Timeout: duration.Duration(time.Minute)}})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				id := fmt.Sprintf("g%02d-c%03d", g, i)
				res, err := p.Measure(ctx, nil, hostileRequest(id, map[string]any{"behaviour": "echo"}))
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
	p := load(t, "hostile", Options{Grants: Grants{Judge: true}, Limits: Limits{PoolSize: 1}})
	svc := newBlockingServices()
	busy := make(chan error, 1)
	go func() {
		_, err := p.Measure(context.Background(), svc, hostileRequest("holder", map[string]any{"behaviour": "judge_many", "calls": 1}))
		busy <- err
	}()
	<-svc.entered // the only instance is now inside a call

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Measure(ctx, nil, hostileRequest("waiter", map[string]any{"behaviour": "echo"}))
	var ae *abi.Error
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ae) {
		t.Fatalf("want the waiter's own deadline, got %v", err)
	}

	close(svc.release)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	res, err := p.Measure(context.Background(), nil, hostileRequest("after", map[string]any{"behaviour": "echo"}))
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
	p, err := testRT.Load(ctx, guestPath("garbage"), guestDigest(t, "garbage"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Measure(ctx, nil, &abi.MeasureRequest{Kind: "ok"}); !errors.Is(err, errPoolClosed) {
		t.Fatalf("want errPoolClosed, got %v", err)
	}
}

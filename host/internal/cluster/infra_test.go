package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/results"
)

// TestMarkInfraFaults: during a transport fault, a deadline that passed
// and a judge call that failed become retryable, naming the fault; what
// a guest raises itself does not, nor does an error already retryable
// get the fault twice.
func TestMarkInfraFaults(t *testing.T) {
	for _, tc := range []struct {
		code      abi.Code
		retryable bool // before
		want      bool
	}{
		{abi.CodeTimeout, false, true},
		{abi.CodeJudge, false, true},
		{abi.CodeJudge, true, true},
		{abi.CodeTrap, false, false},
		{abi.CodeABI, false, false},
		{abi.CodeMetric, false, false},
		{abi.CodeFuelExhausted, false, false},
		{abi.CodeBudget, false, false},
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			r := &results.CaseResult{Metrics: []results.MetricResult{
				{Status: results.StatusError, Error: &abi.Error{Code: tc.code, Message: "m", Retryable: tc.retryable}},
				{Status: results.StatusPassed},
			}}
			markInfraFaults(r, "disconnected from NATS: EOF")
			e := r.Metrics[0].Error
			if e.Retryable != tc.want {
				t.Errorf("retryable = %v, want %v", e.Retryable, tc.want)
			}
			named := strings.Contains(e.Message, "disconnected from NATS: EOF")
			if named != (tc.want && !tc.retryable) {
				t.Errorf("message %q: names the fault %v", e.Message, named)
			}
			if r.Metrics[1].Error != nil {
				t.Errorf("a passed metric got an error: %+v", r.Metrics[1])
			}
		})
	}
}

// stalledKV is a key-value bucket whose reads the server never answers.
type stalledKV struct{ jetstream.KeyValue }

func (stalledKV) Get(ctx context.Context, _ string) (jetstream.KeyValueEntry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestStalledCacheIsAMissNotADeadline: a read of the shared judge cache
// that the store does not answer ends after the cache's own bound — the
// judge is then called — instead of waiting out the invocation's deadline
// and ending the case as a plugin timeout; it is a transport fault of the
// process. A read the caller gave up on is not.
func TestStalledCacheIsAMissNotADeadline(t *testing.T) {
	h := newHealth(nil)
	c := kvCache{kv: stalledKV{}, h: h, wait: time.Millisecond}
	before := h.now()
	_, ok, err := c.GetJudge(context.Background(), "k1")
	if ok || err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("GetJudge = %v, %v; want a miss with the bound's error", ok, err)
	}
	if f := h.since(before); !strings.HasPrefix(f, "judge cache: read judge cache entry k1") {
		t.Errorf("fault recorded = %q", f)
	}

	h = newHealth(nil)
	c.h = h
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.wait = time.Hour
	if _, _, err := c.GetJudge(ctx, "k1"); err == nil {
		t.Fatal("a cancelled read succeeded")
	}
	if f, _ := h.lastFault(); f != "" {
		t.Errorf("a read the caller cancelled was recorded as a fault: %q", f)
	}
}

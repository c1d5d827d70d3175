package inproc

import (
	"context"
	"testing"

	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/plugins/geval"
)

// maxAllocsPerInprocMeasure is the allocation budget of one trivial
// in-process metric call (the guard, the kind, the result encoded once for
// the output cap). 32 and 43 (the two cases below) when the request and
// the result took the JSON round trip; 16 and 24 since both are copied as
// the decoder would give them (inproc_request.go); 15 and 19 since the
// result is measured for the cap without encoding it; 30 and 41 since
// both take the JSON round trip again, through go-json-experiment, the
// result decoded strictly as from a sandbox (no hand codec left); 3 more
// for the invocation's clock (transport.Clock: limits.timeout counts the
// guest's time, not its waits on the judge).
const maxAllocsPerInprocMeasure = 45

// maxAllocsPerInprocGevalMeasure is the allocation budget of one G-Eval
// call in-process against a judge that answers at once (the kind's
// prompt, judge request, reply and details; the guard; the copies of the
// request and the result). 100 before G-Eval's per-metric plans and the
// transport's encoding-free result length, 34 after, 72 since the
// transport and the kind's reply and details go through go-json-experiment
// (no hand codec left); 3 more for the invocation's clock.
const maxAllocsPerInprocGevalMeasure = 77

// TestInprocMeasureAllocBudget is the CI check that the per-call
// allocations of the in-process path stay within budget.
func TestInprocMeasureAllocBudget(t *testing.T) {
	if plugintest.RaceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	p := New(textcheck.Plugin(), transport.Options{})
	for _, tc := range plugintest.ExactMatchRequests() {
		t.Run(tc.Name, func(t *testing.T) {
			plugintest.AllocBudget(t, "one in-process measure call", maxAllocsPerInprocMeasure, func() {
				if _, err := p.Measure(ctx, nil, tc.Req); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestInprocGevalMeasureAllocBudget is the CI check that a G-Eval call
// in-process stays within budget.
func TestInprocGevalMeasureAllocBudget(t *testing.T) {
	if plugintest.RaceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	p := New(geval.Plugin(), transport.Options{Grants: transport.Grants{Judge: true}})
	svc, req := plugintest.NewCannedJudge(), plugintest.GevalBenchRequest()
	plugintest.AllocBudget(t, "one in-process G-Eval call", maxAllocsPerInprocGevalMeasure, func() {
		if res, err := p.Measure(ctx, svc, req); err != nil || res.Error != nil {
			t.Fatal(err, res.Error)
		}
	})
}

package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/sdk"
)

// TestJudgeWaitIsNotTheGuestsTime: limits.timeout counts the guest's own
// time, not its waits on the judge. A guest that waits on one judge call
// for several times its limit (a batched judge answers in minutes or
// hours) is answered and finishes, on every transport; before, every
// case of a batched run was a plugin timeout.
func TestJudgeWaitIsNotTheGuestsTime(t *testing.T) {
	const limit = 300 * time.Millisecond
	opts := Options{Grants: Grants{Judge: true}, Limits: Limits{Timeout: duration.Duration(limit)}}
	// The in-process kind does what the zoo's hostile guest does when its
	// behaviour is judge_many.
	type hostileConfig struct {
		Behaviour string `json:"behaviour"`
		Calls     int    `json:"calls"`
	}
	waiter := &sdk.Plugin{Name: "waiter", Version: "1.0.0", Kinds: []sdk.Kind{&sdk.MetricKind[hostileConfig]{
		Name: "hostile", Capabilities: []abi.Capability{abi.CapJudge},
		Measure: func(ctx context.Context, h sdk.Host, _ *hostileConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			if _, err := h.Judge(ctx, []abi.JudgeRequest{{Messages: []abi.Message{{Role: "user", Content: "again"}}}}); err != nil {
				return nil, err
			}
			s := 1.0
			return &abi.MeasureResult{Score: &s, Success: true}, nil
		},
	}}}
	for _, tr := range []string{TransportInproc, TransportWasm, TransportProcess} {
		t.Run(tr, func(t *testing.T) {
			var p Plugin
			switch tr {
			case TransportInproc:
				p = Inproc(waiter, opts)
			case TransportWasm:
				p = load(t, "hostile", opts)
			default:
				p = loadProcess(t, "hostile", opts)
			}
			svc, done := plugintest.Hold(t, context.Background(), p.Measure, "c1", 1)
			// The judge takes several times the guest's limit to answer.
			<-time.After(4 * limit)
			close(svc.Release)
			if err := <-done; err != nil {
				t.Fatalf("a guest waiting %s on the judge, under a %s limit: %v; want an answer", 4*limit, limit, err)
			}
		})
	}
}

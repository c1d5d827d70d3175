package inproc

import (
	"context"
	"testing"

	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/plugins/geval"
)

// BenchmarkMeasureGeval is one G-Eval call through the in-process
// transport (guard, kind, output cap) against a judge that answers at
// once: the host CPU per case that is not the judge's.
func BenchmarkMeasureGeval(b *testing.B) {
	ctx := context.Background()
	p := New(geval.Plugin(), transport.Options{Grants: transport.Grants{Judge: true}})
	svc := plugintest.NewCannedJudge()
	req := plugintest.GevalBenchRequest()
	for _, par := range []bool{false, true} {
		name := "inproc/geval"
		if par {
			name += "-parallel"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			call := func() {
				res, err := p.Measure(ctx, svc, req)
				if err != nil || res.Error != nil || res.Score == nil {
					b.Fatalf("%v / %+v", err, res)
				}
			}
			plugintest.RunCPUMeasured(b, par, call)
		})
	}
}

package wasm

import (
	"context"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/host/internal/plugin/inproc"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// Run with: go test -run '^$' -bench . -benchtime 3x ./host/plugin/ for the
// compile benchmarks (seconds per op), default benchtime for the rest.

// BenchmarkLoadCold is Load with no compilation cache: decode, validate
// and compile a Go guest (textcheck) to machine code, then start one
// instance. This is what a process without a cache dir pays per plugin.
func BenchmarkLoadCold(b *testing.B) {
	ctx := context.Background()
	path, digest := plugintest.GuestPath("textcheck"), plugintest.GuestDigest(b, "textcheck")
	b.ReportAllocs()
	for b.Loop() {
		loadFresh(b, ctx, RuntimeOptions{}, path, digest)
	}
}

// BenchmarkLoadWarmCache is Load in a fresh process-like Runtime whose
// on-disk cache already holds the module: what every run after the first
// pays.
func BenchmarkLoadWarmCache(b *testing.B) {
	ctx := context.Background()
	path, digest := plugintest.GuestPath("textcheck"), plugintest.GuestDigest(b, "textcheck")
	dir := b.TempDir()
	loadFresh(b, ctx, RuntimeOptions{CacheDir: dir}, path, digest) // the cache now holds the module
	b.ReportAllocs()
	for b.Loop() {
		loadFresh(b, ctx, RuntimeOptions{CacheDir: dir}, path, digest)
	}
}

// loadFresh loads the module at path with one instance in a new Runtime,
// as a process starting up does, and closes both.
func loadFresh(b *testing.B, ctx context.Context, opts RuntimeOptions, path, digest string) {
	rt, err := NewRuntime(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, path, digest, transport.Options{Limits: transport.Limits{PoolSize: 1}})
	if err != nil {
		b.Fatal(err)
	}
	p.Close(ctx)
}

// BenchmarkInstanceWarmup is what replacing a discarded instance costs:
// instantiate, run the Go runtime's initialisation and anvil_describe.
func BenchmarkInstanceWarmup(b *testing.B) {
	ctx := context.Background()
	w := load(b, "textcheck", transport.Options{}).(*wasmPlugin)
	b.ReportAllocs()
	for b.Loop() {
		in, err := w.newInstance(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.warm(ctx, in); err != nil {
			b.Fatal(err)
		}
		in.close(ctx)
	}
}

// BenchmarkMeasure is the per-call overhead of a trivial measure
// (exact_match on short strings) through the pool, against the same kind
// linked in-process, and with a 64 KiB request.
func BenchmarkMeasure(b *testing.B) {
	ctx := context.Background()
	small := &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
		Case: abi.TestCase{ID: "c1", ActualOutput: "Paris", ExpectedOutput: "Paris"}}
	half := strings.Repeat("a", 32<<10)
	big := &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
		Case: abi.TestCase{ID: "c1", ActualOutput: half, ExpectedOutput: half}}
	wasm := load(b, "textcheck", transport.Options{})
	inproc := inproc.New(textcheck.Plugin(), transport.Options{})
	for _, bc := range []struct {
		name string
		p    transport.Plugin
		req  *abi.MeasureRequest
		par  bool
		want float64
	}{
		{"inproc/trivial", inproc, small, false, 1},
		{"wasm/trivial", wasm, small, false, 1},
		{"wasm/trivial-parallel", wasm, small, true, 1},
		{"inproc/bench-case", inproc, plugintest.BenchCase, false, 0},
		{"wasm/bench-case", wasm, plugintest.BenchCase, false, 0},
		{"inproc/64KiB", inproc, big, false, 1},
		{"wasm/64KiB", wasm, big, false, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.req == big {
				b.SetBytes(64 << 10)
			}
			b.ReportAllocs()
			call := func() {
				res, err := bc.p.Measure(ctx, nil, bc.req)
				if err != nil || res.Score == nil || *res.Score != bc.want {
					b.Fatalf("%v / %+v", err, res)
				}
			}
			plugintest.RunCPUMeasured(b, bc.par, call)
		})
	}
}

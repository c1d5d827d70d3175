package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/examples/plugins/textcheck"
	"github.com/agentanvil/anvil/host/internal/cputime"
)

// Run with: go test -run '^$' -bench . -benchtime 3x ./host/plugin/ for the
// compile benchmarks (seconds per op), default benchtime for the rest.

// BenchmarkLoadCold is Load with no compilation cache: decode, validate
// and compile a Go guest (textcheck) to machine code, then start one
// instance. This is what a process without a cache dir pays per plugin.
func BenchmarkLoadCold(b *testing.B) {
	ctx := context.Background()
	path, digest := guestPath("textcheck"), guestDigest(b, "textcheck")
	b.ReportAllocs()
	for b.Loop() {
		rt, err := NewRuntime(ctx, RuntimeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := rt.Load(ctx, path, digest, Options{Limits: Limits{PoolSize: 1}})
		if err != nil {
			b.Fatal(err)
		}
		p.Close(ctx)
		rt.Close(ctx)
	}
}

// BenchmarkLoadWarmCache is Load in a fresh process-like Runtime whose
// on-disk cache already holds the module: what every run after the first
// pays.
func BenchmarkLoadWarmCache(b *testing.B) {
	ctx := context.Background()
	path, digest := guestPath("textcheck"), guestDigest(b, "textcheck")
	dir := b.TempDir()
	prime, err := NewRuntime(ctx, RuntimeOptions{CacheDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	p, err := prime.Load(ctx, path, digest, Options{})
	if err != nil {
		b.Fatal(err)
	}
	p.Close(ctx)
	prime.Close(ctx)
	b.ReportAllocs()
	for b.Loop() {
		rt, err := NewRuntime(ctx, RuntimeOptions{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		p, err := rt.Load(ctx, path, digest, Options{Limits: Limits{PoolSize: 1}})
		if err != nil {
			b.Fatal(err)
		}
		p.Close(ctx)
		rt.Close(ctx)
	}
}

// BenchmarkInstanceWarmup is what replacing a discarded instance costs:
// instantiate, run the Go runtime's initialisation and anvil_describe.
func BenchmarkInstanceWarmup(b *testing.B) {
	ctx := context.Background()
	w := load(b, "textcheck", Options{}).(*wasmPlugin)
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
	wasm := load(b, "textcheck", Options{})
	inproc := Inproc(textcheck.Plugin(), Options{})
	for _, bc := range []struct {
		name string
		p    Plugin
		req  *abi.MeasureRequest
		par  bool
		want float64
	}{
		{"inproc/trivial", inproc, small, false, 1},
		{"wasm/trivial", wasm, small, false, 1},
		{"wasm/trivial-parallel", wasm, small, true, 1},
		{"inproc/bench-case", inproc, benchCase, false, 0},
		{"wasm/bench-case", wasm, benchCase, false, 0},
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
			runCPUMeasured(b, bc.par, call)
		})
	}
}

// benchCase is the first case `bench/cmd/gencases` writes (≈ 1.1 KB of
// text, never matching), under the metric of bench/wasm.yaml: what
// `CONFIG=wasm bench/run.sh` sends per case, so the benchmark's cost per
// call is the Wasm share of that harness's cost per case.
var benchCase = &abi.MeasureRequest{Kind: "exact_match", Metric: "exact",
	Config: []byte(`{"ignore_case":true,"trim":true}`), Threshold: 0.5,
	Case: abi.TestCase{ID: "case-000001",
		Input: "Can you explain how however into account but value capital endpoint deploy. Stable database refund contract partly " +
			"timeout season price 793 public or release engineer reduce carefully partly reduce to with?",
		ActualOutput: "Mountain field while explain rarely 960 cache threshold 357 shared weather other simple. Unless network document few " +
			"several stable recent term budget. By network after transfer migrate several for to simple. Market user climate pipeline " +
			"price each model quickly or until several. Server therefore 292 neither secure configure other under. Configure so price " +
			"population analyst stable increase release. Analyst third 554 database each but after unless result for 82. Small so " +
			"failure population service query season retry for. Small whereas about 127 early explain although failure. Balance never " +
			"weather increase 955 clause service.",
		ExpectedOutput: "But migrate small account but describe every record dataset 49 response user or compare. Small value section before " +
			"engineer token configure retry retry summary both document therefore budget.",
	}}

// runCPUMeasured runs call b.N times, in parallel when par, and reports
// the process's CPU time (user+sys, GC included) per call: on a shared
// machine it moves far less than wall time.
func runCPUMeasured(b *testing.B, par bool, call func()) {
	cpu0 := cputime.Process()
	defer func() { b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op") }()
	if par {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
		return
	}
	for b.Loop() {
		call()
	}
}

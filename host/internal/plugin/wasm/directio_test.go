package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/testknobs"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/host/internal/wasmmeter"
	extism "github.com/extism/go-sdk"
)

// TestDirectIOSameResults: a Go guest called through direct I/O (anvil_io)
// answers exactly what it answers through Extism's input and output (what
// a host of ABI minor < 3 does with the same module), for requests that
// fit the guest's first buffer, that make it grow, and that make it
// release a large buffer afterwards (TestDirectIOBounds checks the bounds).
func TestDirectIOSameResults(t *testing.T) {
	ctx := context.Background()
	direct := load(t, "textcheck", transport.Options{}).(*wasmPlugin)
	extism := load(t, "textcheck", transport.Options{Test: &testknobs.Knobs{ExtismIO: true}}).(*wasmPlugin)
	if !direct.directIO || extism.directIO {
		t.Fatalf("directIO: %v with the default options, %v with extismIO; want true, false", direct.directIO, extism.directIO)
	}

	text := func(n int) string { return strings.Repeat("Ünïcödé and ASCII ", n/20+1)[:n] }
	for _, tc := range []struct {
		name string
		req  *abi.MeasureRequest
	}{
		{"equal", &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c1", ActualOutput: "Paris", ExpectedOutput: "Paris"}}},
		{"bench case", plugintest.BenchCase},
		{"non-ASCII, escapes", &abi.MeasureRequest{Kind: "exact_match", Metric: "m", Config: []byte(`{"ignore_case":true}`),
			Case: abi.TestCase{ID: "c\"2", ActualOutput: "Straße \u2028\t\"x\"", ExpectedOutput: "STRASSE"}}},
		{"grows the buffer (12 KiB)", &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c3", ActualOutput: text(6 << 10), ExpectedOutput: text(6<<10) + "!"}}},
		{"large, released after (600 KiB)", &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c4", ActualOutput: text(300 << 10), ExpectedOutput: text(300 << 10)}}},
		{"small again", &abi.MeasureRequest{Kind: "exact_match", Metric: "m",
			Case: abi.TestCase{ID: "c5", ActualOutput: "a", ExpectedOutput: "b"}}},
		{"unknown kind: metric error", &abi.MeasureRequest{Kind: "nope", Metric: "m", Case: abi.TestCase{ID: "c6"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gerr := direct.Measure(ctx, nil, tc.req)
			want, werr := extism.Measure(ctx, nil, tc.req)
			if g, w := outcome(t, got, gerr), outcome(t, want, werr); g != w {
				t.Errorf("direct I/O and Extism I/O disagree:\ndirect %s\nextism %s", g, w)
			}
		})
	}
	// The calls above went through the buffer: an instance of the direct
	// plugin knows its control block, and the guest's last answer is there.
	in, err := direct.pool.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.pool.put(ctx, in, true)
	ctrl, ok := in.guest.Memory().Read(in.io, ioSize)
	if in.io == 0 || !ok || le32(ctrl, ioState) != ioAnswer {
		t.Errorf("direct instance: control block at %d (readable %v), want a block in state %d", in.io, ok, ioAnswer)
	}
}

// outcome renders a call's result, or its error's code.
func outcome(t *testing.T, res *abi.MeasureResult, err error) string {
	t.Helper()
	if err != nil {
		var ae *abi.Error
		if errors.As(err, &ae) {
			return "error " + string(ae.Code)
		}
		return "error " + err.Error()
	}
	return plugintest.MustJSON(t, res)
}

// TestDirectIOKernelStateIsFresh: a direct-I/O call leaves Extism's
// kernel alone when nothing used it (CallDirect), so whatever a call did
// use it for — an answer, an error — must not be seen by the next call.
func TestDirectIOKernelStateIsFresh(t *testing.T) {
	ctx := context.Background()
	p := load(t, "badio", transport.Options{}).(*wasmPlugin)
	for _, tc := range []struct {
		kinds []string // called in order on one plugin; the last is checked
		want  string   // the reason, or "error" and a message fragment
	}{
		{[]string{"extism"}, "through Extism"},
		{[]string{"ok", "extism", "ok"}, "from linear memory"},
		{[]string{"extism", "silent"}, "error: "},
		{[]string{"ok", "silent"}, "error: "},
		{[]string{"ok", "seterror"}, "error: guest says no"},
		{[]string{"ok", "errzero"}, "error: guest says no and returns 0"},
		{[]string{"errzero", "ok", "ok"}, "from linear memory"},
		{[]string{"seterror", "silent"}, "error: "},
	} {
		t.Run(strings.Join(tc.kinds, "+"), func(t *testing.T) {
			var res *abi.MeasureResult
			var err error
			for _, k := range tc.kinds {
				res, err = p.Measure(ctx, nil, &abi.MeasureRequest{Kind: k, Metric: "m", Case: abi.TestCase{ID: "c"}})
			}
			if frag, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
				if err == nil {
					t.Fatalf("got %+v; want an error", res)
				}
				if strings.Contains(err.Error(), "through Extism") || strings.Contains(err.Error(), "linear memory") {
					t.Fatalf("error %v carries an earlier call's answer", err)
				}
				if !strings.Contains(err.Error(), frag) {
					t.Fatalf("error %v; want it to say %q", err, frag)
				}
				if frag == "" && strings.Contains(err.Error(), "guest says no") {
					t.Fatalf("error %v is an earlier call's", err)
				}
				return
			}
			if err != nil || res.Reason != tc.want {
				t.Fatalf("got %+v, %v; want reason %q", res, err, tc.want)
			}
		})
	}
}

// TestDirectIOBounds: what a guest claims in its control block is checked
// before the host reads or writes anything: an answer longer than
// max_output_bytes is output_too_large, an answer or a request buffer
// outside linear memory is an ABI violation, and each discards the
// instance; an honest answer from linear memory is used.
func TestDirectIOBounds(t *testing.T) {
	ctx := context.Background()
	p := load(t, "badio", transport.Options{}).(*wasmPlugin)
	if !p.directIO {
		t.Fatal("badio offers anvil_io with abi_minor 3; the host does not use it")
	}
	for _, tc := range []struct {
		kinds  []string // called in order; the last one's outcome is checked
		code   abi.Code // "" = success
		reason string
	}{
		{kinds: []string{"ok"}, reason: "from linear memory"},
		{kinds: []string{"huge"}, code: abi.CodeOutputTooLarge},
		{kinds: []string{"outside"}, code: abi.CodeABI},
		{kinds: []string{"nobuffer", "ok"}, code: abi.CodeABI},
	} {
		t.Run(strings.Join(tc.kinds, "+"), func(t *testing.T) {
			var res *abi.MeasureResult
			var err error
			before := p.instances.Load()
			for _, k := range tc.kinds {
				res, err = p.Measure(ctx, nil, &abi.MeasureRequest{Kind: k, Metric: "m", Case: abi.TestCase{ID: "c"}})
			}
			if tc.code == "" {
				if err != nil || res.Reason != tc.reason || res.Score == nil || *res.Score != 1 {
					t.Fatalf("got %+v, %v; want score 1 and reason %q", res, err, tc.reason)
				}
				return
			}
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != tc.code {
				t.Fatalf("got %+v, %v; want error code %s", res, err, tc.code)
			}
			// The failed instance is gone: the next call starts a new one.
			if _, err := p.Measure(ctx, nil, &abi.MeasureRequest{Kind: "ok", Metric: "m", Case: abi.TestCase{ID: "c"}}); err != nil {
				t.Fatalf("the call after: %v", err)
			}
			if p.instances.Load() == before {
				t.Errorf("no new instance after %s: the one that lied was kept", ae.Code)
			}
		})
	}
}

var kernelCalledByHost = map[string]bool{"reset": true, "alloc": true, "input_set": true,
	"error_get": true, "length": true, "output_offset": true, "output_length": true}

// callCounter counts calls per function (a wazero function listener).
type callCounter struct{ calls map[string]int }

func (c *callCounter) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	name := def.ModuleName() + "." + def.Name()
	switch def.ModuleName() {
	case envModule, kernelModule, wasmmeter.ImportModule:
	default:
		name = "guest"
		if slices.ContainsFunc(def.ExportNames(), func(n string) bool { return kernelCalledByHost[n] }) {
			// The kernel's exports the host calls around a measure
			// (Extism's SetInput, GetError, GetOutput) — the guest's own
			// function names are Go's, package-qualified.
			name = "kernel"
		}
	}
	return experimental.FunctionListenerFunc(func(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
		c.calls[name]++
	})
}

// maxGuestCallsPerBenchCase bounds the Wasm function calls one measure of
// plugintest.BenchCase makes in textcheck (a count, so it holds on a loaded machine;
// every call, like every taken jump, passes the termination check). For
// scale: ≈ 960 before direct I/O (150 of them input_load_u64), 544 with
// it, 379 once exact_match's reason no longer went through fmt, 346 with
// scanString's 32-byte steps, 324 with appendString walking a non-plain
// window bytewise and 0/1 written without strconv.
const maxGuestCallsPerBenchCase = 400

// TestDirectIOHostCalls: with direct I/O a measure call makes no Extism
// input or output host calls at all (the request is not copied 8 bytes per
// call), and the guest's calls stay within budget; through Extism's I/O
// the same call makes one input_load_u64 per 8 bytes of request.
func TestDirectIOHostCalls(t *testing.T) {
	if plugintest.RaceEnabled {
		t.Skip("compiles the guest once more, which takes minutes under the race detector; the counts do not depend on it")
	}
	ctx := context.Background()
	w := load(t, "textcheck", transport.Options{}).(*wasmPlugin)
	wasm, err := os.ReadFile(plugintest.GuestPath("textcheck"))
	if err != nil {
		t.Fatal(err)
	}
	if wasm, err = instrument(wasm, w.opts.Limits); err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(plugintest.BenchCase)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		direct bool
	}{{"direct I/O", true}, {"Extism I/O", false}} {
		t.Run(tc.name, func(t *testing.T) {
			count := &callCounter{calls: map[string]int{}}
			listeners := experimental.MultiFunctionListenerFactory(count, bounds{maxBytes: w.opts.Limits.MaxOutputBytes})
			c, err := extism.NewCompiledPlugin(experimental.WithFunctionListenerFactory(ctx, listeners), manifest(wasm, w.opts.Limits),
				extism.PluginConfig{RuntimeConfig: wazero.NewRuntimeConfig(), EnableWasi: true}, w.hostFunctions())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			p, err := c.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig()})
			if err != nil {
				t.Fatal(err)
			}
			in := &instance{p: p, stderr: transport.NewStderrBuffer(transport.StderrKeep)}
			defer in.close(ctx)
			if _, err := w.warm(ctx, in); err != nil {
				t.Fatal(err)
			}
			if tc.direct {
				if err := w.openIO(ctx, in); err != nil {
					t.Fatal(err)
				}
			}
			g := transport.NewGuard(nil, w.info, w.opts, w.logger)
			call := func() {
				if _, _, err := in.call(withGuard(ctx, g), abi.ExportMeasure, req, w.opts.Limits.MaxOutputBytes, 0); err != nil {
					t.Fatal(err)
				}
			}
			call() // warm: first-call allocations in the guest
			clear(count.calls)
			const n = 10
			for range n {
				call()
			}
			loads := count.calls[kernelModule+".input_load_u64"] / n
			stores := count.calls[kernelModule+".store_u64"] / n
			guest := count.calls["guest"] / n
			kernel := count.calls["kernel"] / n
			t.Logf("per call: %d guest calls, %d kernel calls, %d input_load_u64, %d store_u64", guest, kernel, loads, stores)
			if tc.direct && kernel != 0 {
				// Nothing used Extism's kernel: resetting it, or reading
				// its (empty) error and output, would change nothing.
				t.Errorf("direct I/O made %d kernel calls per measure; want 0", kernel)
			}
			if !tc.direct && kernel == 0 {
				t.Error("Extism I/O made no kernel calls: the count is broken")
			}
			if tc.direct {
				if loads != 0 || stores != 0 || count.calls[kernelModule+".input_load_u8"] != 0 {
					t.Errorf("direct I/O made %d input_load_u64 and %d store_u64 calls per measure; want 0", loads, stores)
				}
				if guest > maxGuestCallsPerBenchCase {
					t.Errorf("%d guest function calls per measure, over the budget of %d", guest, maxGuestCallsPerBenchCase)
				}
			} else if want := len(req) / 8; loads != want {
				t.Errorf("Extism I/O made %d input_load_u64 calls for a %d-byte request; want %d", loads, len(req), want)
			}
		})
	}
}

// TestDirectIOOnlyFromMinor3: an anvil_io export is used only under
// abi_minor >= 3 — a module of minor 2 exporting that name is called the
// Extism way and its export never runs — and a minor-3 module whose
// anvil_io is not (i32) -> i32 is refused at load.
func TestDirectIOOnlyFromMinor3(t *testing.T) {
	ctx := context.Background()
	old := load(t, "oldio", transport.Options{}).(*wasmPlugin)
	if old.directIO {
		t.Error("direct I/O enabled for a module of abi_minor 2")
	}
	res, err := old.Measure(ctx, nil, &abi.MeasureRequest{Kind: "echo", Metric: "m", Case: abi.TestCase{ID: "c"}})
	if err != nil || res.Reason != "through Extism" {
		t.Fatalf("minor-2 module: %+v, %v; want its Extism answer", res, err)
	}
	_, err = testRT.Load(ctx, plugintest.GuestPath("badiosig"), plugintest.GuestDigest(t, "badiosig"), transport.Options{})
	var ae *abi.Error
	if !errors.As(err, &ae) || ae.Code != abi.CodeABI || !strings.Contains(ae.Message, "anvil_io is not a function (i32) -> i32") {
		t.Fatalf("load of a module with anvil_io () -> i32: %v; want abi_violation naming anvil_io's signature", err)
	}
}

package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
)

// TestDirectIOSameResults: a Go guest called through direct I/O (anvil_io)
// answers exactly what it answers through Extism's input and output (what
// a host of ABI minor < 3 does with the same module), for requests that
// fit the guest's first buffer, that make it grow, and that make it
// release a large buffer afterwards (TestDirectIOBounds checks the bounds).
func TestDirectIOSameResults(t *testing.T) {
	ctx := context.Background()
	direct := load(t, "textcheck", Options{}).(*wasmPlugin)
	extism := load(t, "textcheck", Options{extismIO: true}).(*wasmPlugin)
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
		{"bench case", benchCase},
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
	ctrl, ok := in.p.GuestMemory().Read(in.io, ioSize)
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
	return mustJSON(t, res)
}

// TestDirectIOBounds: what a guest claims in its control block is checked
// before the host reads or writes anything: an answer longer than
// max_output_bytes is output_too_large, an answer or a request buffer
// outside linear memory is an ABI violation, and each discards the
// instance; an honest answer from linear memory is used.
func TestDirectIOBounds(t *testing.T) {
	ctx := context.Background()
	p := load(t, "badio", Options{}).(*wasmPlugin)
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

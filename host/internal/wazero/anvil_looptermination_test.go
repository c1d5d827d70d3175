package wazero_test

// Anvil patch tests (PATCHES.md, "Inline termination check"): with
// WithCloseOnContextDone, a loop header leaves native code only when the
// module is closed or every wazevo TerminationCheckInterval (256) headers,
// and a closed module still stops a looping guest with the same error.

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/wazero"
	"github.com/agentanvil/anvil/host/internal/wazero/api"
	"github.com/agentanvil/anvil/host/internal/wazero/sys"
)

// exitCounter is the test hook the patched call engine adds.
type exitCounter interface{ ModuleExitChecks() uint64 }

// Minimal Wasm binary encoding: every length here is below 128, but uleb
// keeps the helpers honest.
func uleb(n int) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func vec(items ...[]byte) []byte {
	b := uleb(len(items))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func section(id byte, payload []byte) []byte {
	return append(append([]byte{id}, uleb(len(payload))...), payload...)
}

func name(s string) []byte { return append(uleb(len(s)), s...) }

func body(code ...byte) []byte {
	b := append([]byte{0}, code...) // no locals
	return append(uleb(len(b)), b...)
}

// countdownWasm exports loop(n i32) i32, which runs a loop header n times
// (n >= 1) and returns 0:
//
//	loop
//	  local.get 0  i32.const 1  i32.sub  local.tee 0  br_if 0
//	end
//	local.get 0
func countdownWasm() []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, vec([]byte{0x60, 1, 0x7f, 1, 0x7f}))...) // (i32) -> i32
	m = append(m, section(3, vec([]byte{0}))...)
	m = append(m, section(7, vec(append(name("loop"), 0, 0)))...)
	m = append(m, section(10, vec(body(
		0x03, 0x40, // loop
		0x20, 0, 0x41, 1, 0x6b, 0x22, 0, 0x0d, 0,
		0x0b,    // end loop
		0x20, 0, // local.get 0
		0x0b,
	)))...)
	return m
}

// spinWasm imports env.started () and exports spin (), which calls started
// once and then loops forever: `call 0  loop br 0 end`.
func spinWasm() []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, vec([]byte{0x60, 0, 0}))...) // () -> ()
	m = append(m, section(2, vec(append(append(name("env"), name("started")...), 0, 0)))...)
	m = append(m, section(3, vec([]byte{0}))...)
	m = append(m, section(7, vec(append(name("spin"), 0, 1)))...)
	m = append(m, section(10, vec(body(
		0x10, 0, // call started
		0x03, 0x40, 0x0c, 0, 0x0b, // loop br 0 end
		0x0b,
	)))...)
	return m
}

func compilerRuntime(t *testing.T, ctx context.Context, closeOnDone bool) wazero.Runtime {
	t.Helper()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(closeOnDone))
	t.Cleanup(func() { r.Close(ctx) })
	return r
}

func TestLoopHeadersLeaveNativeCodeOnlyPeriodically(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		closeOnDone bool
		n           uint64
		want        uint64 // exits through the checkModuleExitCode trampoline
	}{
		{"one header", true, 1, 0},
		{"255 headers", true, 255, 0},
		{"256 headers", true, 256, 1},
		{"100000 headers", true, 100000, 100000 / 256},
		{"no close on done, no checks", false, 100000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := compilerRuntime(t, ctx, tc.closeOnDone)
			mod, err := r.Instantiate(ctx, countdownWasm())
			if err != nil {
				t.Fatal(err)
			}
			f := mod.ExportedFunction("loop")
			counter, ok := f.(exitCounter)
			if !ok {
				t.Skipf("%T is not the compiler's call engine (no compiler on this platform?)", f)
			}
			res, err := f.Call(ctx, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if res[0] != 0 {
				t.Fatalf("loop(%d) = %d, want 0", tc.n, res[0])
			}
			if got := counter.ModuleExitChecks(); got != tc.want {
				t.Errorf("loop(%d) left native code %d times to check the module, want %d", tc.n, got, tc.want)
			}
		})
	}
}

// spin instantiates spinWasm with started as env.started.
func spin(t *testing.T, ctx context.Context, r wazero.Runtime, started func()) api.Module {
	t.Helper()
	_, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(context.Context) { started() }).Export("started").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := r.Instantiate(ctx, spinWasm())
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func wantExit(t *testing.T, err error, code uint32) {
	t.Helper()
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != code {
		t.Fatalf("err = %v, want a sys.ExitError with exit code %#x", err, code)
	}
}

func TestContextStopsLoopingGuest(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		r := compilerRuntime(t, context.Background(), true)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mod := spin(t, ctx, r, cancel) // the guest cancels its own context, then loops
		_, err := mod.ExportedFunction("spin").Call(ctx)
		wantExit(t, err, sys.ExitCodeContextCanceled)
		// The module is closed for good: the next call fails the same way.
		_, err = mod.ExportedFunction("spin").Call(context.Background())
		wantExit(t, err, sys.ExitCodeContextCanceled)
	})
	t.Run("deadline", func(t *testing.T) {
		r := compilerRuntime(t, context.Background(), true)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		mod := spin(t, ctx, r, func() {})
		_, err := mod.ExportedFunction("spin").Call(ctx)
		wantExit(t, err, sys.ExitCodeDeadlineExceeded)
	})
}

// TestGCWhileGuestLoops: a stop-the-world completes while a guest loops
// without calling out. Go cannot preempt native code, so this holds only
// because loop headers still leave native code every 256 headers; a check
// that left only once the module is closed would hang here.
func TestGCWhileGuestLoops(t *testing.T) {
	r := compilerRuntime(t, context.Background(), true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	mod := spin(t, ctx, r, func() { close(started) })
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(ctx)
		done <- err
	}()
	<-started
	runtime.GC()
	cancel()
	wantExit(t, <-done, sys.ExitCodeContextCanceled)
}

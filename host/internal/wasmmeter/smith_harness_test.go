package wasmmeter

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The generated-module test is only as good as its differential: these
// check that it sees what it is for, with hand-made modules and rewriters
// known to be wrong, and need no wasm-tools.

// spinModule's export "spin" loops for ever.
func spinModule() []byte {
	m := newMod()
	m.exportFn("spin", m.fn(none, none, nil, loop(blockEmpty), br(0), opEnd))
	return m.bytes()
}

// constModule's export "one" returns v.
func constModule(v int32) []byte {
	m := newMod()
	m.exportFn("one", m.fn(none, i32, nil, i32c(v)))
	return m.bytes()
}

func TestSmithHarnessStopsTheOriginal(t *testing.T) {
	ctx := context.Background()
	d, err := newDiffer(ctx, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close(ctx)
	d.onHang = func(what string) { panic(what) }
	// callTree(41) makes 2^40 calls, and has no loop header where
	// close-on-context-done could stop it.
	for name, wasm := range map[string][]byte{"a loop": spinModule(), "a call tree of 2^40 calls": callTree(41).bytes()} {
		exports, err := readExports(wasm)
		if err != nil {
			t.Fatal(err)
		}
		compiled, err := d.orig.CompileModule(withStopAtDeadline(ctx), wasm)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		run := d.run(ctx, compiled, exports, 1<<20, false, d.deadline)
		compiled.Close(ctx)
		last := run.steps[len(run.steps)-1]
		if last.kind != stepStopped || last.name != exports[0].name {
			t.Errorf("%s: the original's last step: %s %s, want export %q stopped", name, last.what(), last.kind, exports[0].name)
		}
		if last.elapsed > time.Second {
			t.Errorf("%s: stopped %v after it started, with a deadline of %v", name, last.elapsed, d.deadline)
		}
	}
}

func TestSmithHarnessFindsAMeterThatDoesNotStop(t *testing.T) {
	ctx := context.Background()
	d, err := newDiffer(ctx, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close(ctx)
	d.onHang = func(what string) { panic(what) }
	d.engineGrace = 100 * time.Millisecond
	d.instrument = func(wasm []byte) ([]byte, error) { return wasm, nil }
	d.protocol = false
	v, err := d.check(ctx, spinModule())
	if err == nil || !strings.Contains(err.Error(), `export "spin": the meter did not stop it; close-on-context-done did`) {
		t.Errorf("an uninstrumented loop: got %s, %v; want the finding that the meter did not stop it", v, err)
	}
}

func TestSmithHarnessFindsAChangedResult(t *testing.T) {
	ctx := context.Background()
	d, err := newDiffer(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close(ctx)
	d.onHang = func(what string) { panic(what) }
	d.protocol = false
	one, two := constModule(1), constModule(2)
	d.instrument = func([]byte) ([]byte, error) { return two, nil }
	v, err := d.check(ctx, one)
	if want := `export "one": result slot 0 (i32): the original returned 0x1, the instrumented module 0x2`; err == nil || err.Error() != want {
		t.Errorf("a rewriter that changes a constant: got %s, %v; want %q", v, err, want)
	}

	// And one that traps where the original returned.
	m := newMod()
	m.exportFn("one", m.fn(none, i32, nil, byte(0x00))) // unreachable
	trap := m.bytes()
	d.instrument = func([]byte) ([]byte, error) { return trap, nil }
	v, err = d.check(ctx, one)
	if want := `export "one": the original returned, the instrumented module trapped (wasm error: unreachable)`; err == nil || err.Error() != want {
		t.Errorf("a rewriter that adds a trap: got %s, %v; want %q", v, err, want)
	}

	// The same module on both sides is no finding.
	d.instrument = func(wasm []byte) ([]byte, error) { return bytes.Clone(wasm), nil }
	if v, err := d.check(ctx, one); v != verdictFinished || err != nil {
		t.Errorf("an identical module: got %s, %v; want finished, no finding", v, err)
	}
}

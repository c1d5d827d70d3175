package wasmmeter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// meter is a host side of the meter imports for tests: it hands out grant
// units at enter and yield and keeps the fuel used, the sum of (granted -
// remaining) each time the guest reports.
type meter struct {
	grant int64
	// failAfter makes the yield with that number panic (0: never).
	failAfter int

	last                   int64
	used                   int64
	enters, yields, leaves int
	outer                  []int64
}

var errFuelOut = errors.New("test meter: fuel out")

// serve instantiates the meter imports in r, answered by m.
func (m *meter) serve(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(ImportModule).
		NewFunctionBuilder().WithFunc(m.enter).Export(EnterName).
		NewFunctionBuilder().WithFunc(m.yield).Export(YieldName).
		NewFunctionBuilder().WithFunc(m.leave).Export(LeaveName).
		Instantiate(ctx)
	return err
}

func (h *meter) enter(_ context.Context, outer int64) int64 {
	h.enters++
	h.outer = append(h.outer, outer)
	h.last = h.grant
	return h.grant
}

func (h *meter) yield(_ context.Context, remaining int64) int64 {
	h.yields++
	h.used += h.last - remaining
	if h.failAfter > 0 && h.yields >= h.failAfter {
		panic(errFuelOut)
	}
	h.last = h.grant
	return h.grant
}

func (h *meter) leave(_ context.Context, remaining int64) int64 {
	h.leaves++
	h.used += h.last - remaining
	outer := h.outer[len(h.outer)-1]
	h.outer = h.outer[:len(h.outer)-1]
	h.last = outer
	return outer
}

// instance is a module instantiated in its own runtime.
type instance struct {
	r   wazero.Runtime
	mod api.Module
}

func (in *instance) close() { in.r.Close(context.Background()) }

// instantiate compiles and instantiates wasm; with h, the meter imports are
// served by h. Instantiation errors are returned, compile errors fail t.
func instantiate(t testing.TB, wasm []byte, h *meter) (*instance, error) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	if h != nil {
		err := h.serve(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
	}
	// The host functions test modules import.
	_, err := r.NewHostModuleBuilder("env").
		NewFunctionBuilder().WithFunc(func(x int32) int32 { return 2 * x }).Export("twice").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		r.Close(ctx)
		t.Fatalf("compile: %v", err)
	}
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("guest"))
	if err != nil {
		r.Close(ctx)
		return nil, err
	}
	return &instance{r: r, mod: mod}, nil
}

// outcome is what a call did: its results or the first line of its error.
type outcome struct {
	results []uint64
	err     string
}

func (in *instance) call(name string, args ...uint64) outcome {
	f := in.mod.ExportedFunction(name)
	if f == nil {
		return outcome{err: "no export " + name}
	}
	res, err := f.Call(context.Background(), args...)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return outcome{err: msg}
	}
	return outcome{results: res}
}

// state is the exported memories and globals, which the rewrite must leave
// as the original leaves them. The names come from the original module.
func (in *instance) state(exports []export) []byte {
	var b []byte
	for _, e := range exports {
		switch e.kind {
		case 2:
			m := in.mod.ExportedMemory(string(e.name))
			mb, _ := m.Read(0, m.Size())
			b = append(append(b, e.name...), mb...)
		case 3:
			g := in.mod.ExportedGlobal(string(e.name))
			if g.Type() == api.ValueTypeExternref || g.Type() == 0x70 { // externref, funcref
				continue // a pointer: differs between instances
			}
			b = binary.LittleEndian.AppendUint64(append(b, e.name...), g.Get())
		}
	}
	return b
}

type testCall struct {
	name string
	args []uint64
}

func calls(names ...string) []testCall {
	var cs []testCall
	for _, n := range names {
		cs = append(cs, testCall{name: n})
	}
	return cs
}

// compare runs the calls on the original and the instrumented module, each
// in a fresh instance, and fails t when results, traps or memory differ.
func compare(t *testing.T, orig []byte, opts Options, cs []testCall) *meter {
	t.Helper()
	metered, err := Instrument(orig, opts)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	h := &meter{grant: 1 << 50}
	a, errA := instantiate(t, orig, nil)
	b, errB := instantiate(t, metered, h)
	if (errA == nil) != (errB == nil) {
		t.Fatalf("instantiate: original %v, metered %v", errA, errB)
	}
	if errA != nil {
		return h
	}
	defer a.close()
	defer b.close()
	for _, c := range cs {
		want, got := a.call(c.name, c.args...), b.call(c.name, c.args...)
		if testing.Verbose() {
			t.Logf("%s%v: %+v", c.name, c.args, got)
		}
		if want.err != got.err || !equalResults(want.results, got.results) {
			t.Errorf("%s%v: original %+v, metered %+v", c.name, c.args, want, got)
		}
	}
	m, err := parseModule(orig)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.state(m.exports), b.state(m.exports)) {
		t.Errorf("memory or globals differ after the calls")
	}
	return h
}

func equalResults(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// compileOnly validates wasm with wazero without instantiating it.
func compileOnly(t testing.TB, wasm []byte) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, wasm); err != nil {
		t.Fatalf("compile: %v", err)
	}
}

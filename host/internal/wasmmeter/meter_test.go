package wasmmeter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/agentanvil/anvil/internal/testkit"
)

func mustInstrument(t testing.TB, wasm []byte, opts Options) []byte {
	t.Helper()
	out, err := Instrument(wasm, opts)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	return out
}

// A call tree without loops (2^44 calls) must stop at the host's word: each
// function entry checks the counter, so yield comes every grant units.
func TestCallTreeWithoutLoopsYields(t *testing.T) {
	metered := mustInstrument(t, callTree(45).bytes(), Options{})
	for _, failAfter := range []int{1, 2, 50} {
		h := &meter{grant: 1000, failAfter: failAfter}
		in, err := instantiate(t, metered, h)
		if err != nil {
			t.Fatal(err)
		}
		got := in.call("tree")
		in.close()
		if !strings.Contains(got.err, errFuelOut.Error()) {
			t.Fatalf("failAfter %d: call ended with %+v, want the yield's panic", failAfter, got)
		}
		if h.yields != failAfter {
			t.Errorf("failAfter %d: %d yields", failAfter, h.yields)
		}
		// Each yield comes after at most grant units plus one function's run.
		if h.used > int64(failAfter)*(1000+8) {
			t.Errorf("failAfter %d: used %d units before stopping", failAfter, h.used)
		}
	}
}

// A loop without calls yields at its header.
func TestInfiniteLoopYields(t *testing.T) {
	m := newMod()
	f := m.fn(none, none, nil, loop(blockEmpty), br(0), opEnd)
	m.exportFn("spin", f)
	h := &meter{grant: 100, failAfter: 10}
	in, err := instantiate(t, mustInstrument(t, m.bytes(), Options{}), h)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	if got := in.call("spin"); !strings.Contains(got.err, errFuelOut.Error()) {
		t.Fatalf("spin ended with %+v", got)
	}
	if h.yields != 10 {
		t.Errorf("%d yields, want 10", h.yields)
	}
}

// fuelUsed runs one call in a fresh instance and returns the fuel it used.
func fuelUsed(t *testing.T, metered []byte, grant int64, c testCall) (int64, *meter) {
	t.Helper()
	h := &meter{grant: grant}
	in, err := instantiate(t, metered, h)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	start := h.used // the start function's, if any
	if got := in.call(c.name, c.args...); got.err != "" {
		t.Fatalf("%s: %s", c.name, got.err)
	}
	return h.used - start, h
}

func TestFuelIsExactAndDeterministic(t *testing.T) {
	constant := newMod()
	constant.exportFn("one", constant.fn(none, i32, nil, i32c(1)))
	cases := []struct {
		name string
		mod  *tmod
		call testCall
		want int64 // 0: only check determinism
	}{
		// i32.const, end: one run from entry.
		{"constant", constant, args("one"), 2},
		// Entry (block, loop) 2; each of the 11 visits of the loop header 13;
		// after the outer block's end (local.get, end) 2.
		{"loop", loopSum(), args("sum", 10), 2 + 11*13 + 2},
		{"tree", callTree(12), args("tree"), 0},
		{"fib", fib(), args("fib", 12), 0},
		{"bulk", bulkMemory(), args("fill", 0, 1, 6400), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			metered := mustInstrument(t, c.mod.bytes(), Options{})
			first, h := fuelUsed(t, metered, 1<<40, c.call)
			if c.want != 0 && first != c.want {
				t.Errorf("used %d, want %d", first, c.want)
			}
			if h.yields != 0 {
				t.Errorf("%d yields with ample fuel", h.yields)
			}
			// Small slices: many yields, same total.
			again, h := fuelUsed(t, metered, 7, c.call)
			if again != first {
				t.Errorf("used %d with small slices, %d with one", again, first)
			}
			if first > 14 && h.yields == 0 {
				t.Errorf("no yield with slices of 7 units for %d units", first)
			}
		})
	}
}

// memory.fill of 64 MiB costs its size: at least 64Mi/64 units per fill.
func TestBulkMemoryCostsBySize(t *testing.T) {
	m := newMod()
	m.memory(1024)
	const iterations = 3
	f := m.fn(none, none, i32,
		i32c(iterations), lset(0),
		loop(blockEmpty),
		i32c(0), i32c(0x5A), i32c(64<<20), misc(11, 0),
		lget(0), i32c(1), opI32Sub, lset(0),
		lget(0), brIf(0),
		opEnd)
	m.exportFn("fill", f)
	used, _ := fuelUsed(t, mustInstrument(t, m.bytes(), Options{}), 1<<50, args("fill"))
	if min := int64(iterations * ((64<<20)/64 + 1)); used < min {
		t.Errorf("used %d, want at least %d", used, min)
	}
	// A failing yield before the first fill stops it: the fill is charged
	// and checked before it runs.
	h := &meter{grant: 1000, failAfter: 1}
	in, err := instantiate(t, mustInstrument(t, m.bytes(), Options{}), h)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	if got := in.call("fill"); !strings.Contains(got.err, errFuelOut.Error()) {
		t.Fatalf("fill ended with %+v", got)
	}
	if b, _ := in.mod.ExportedMemory("memory").Read(0, 1); b[0] != 0 {
		t.Errorf("the fill ran before its charge was checked")
	}
}

func TestMemoryBudget(t *testing.T) {
	m := newMod()
	m.memory(1)
	tbl := m.table(valFuncref, 2)
	ext := m.table(valExternref, 0)
	growMem := m.fn(i32, i32, nil, lget(0), 0x40, 0)
	growTable := m.fn(i32, i32, nil, 0xD0, valFuncref, lget(0), misc(15, tbl))
	growExtern := m.fn(i32, i32, nil, 0xD0, valExternref, lget(0), misc(15, ext))
	m.exportFn("mem", growMem)
	m.exportFn("table", growTable)
	m.exportFn("extern", growExtern)
	wasm := m.bytes()

	// One page and two elements at load; room for one more page and ten
	// more elements.
	budget := uint64(2*65536 + 12*TableElementBytes)
	in, err := instantiate(t, mustInstrument(t, wasm, Options{MemoryBudget: budget}), &meter{grant: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	steps := []struct {
		call testCall
		want int32
	}{
		{args("mem", 2), -1},
		{args("mem", 1), 1},
		{args("mem", 1), -1},
		{args("table", 11), -1},
		{args("table", 6), 2},
		{args("extern", 5), -1},
		{args("extern", 4), 0},
		{args("table", 1), -1},
		{args("extern", 1), -1},
		{args("mem", 0), 2},
		{args("table", 0), 8},
	}
	for _, s := range steps {
		got := in.call(s.call.name, s.call.args...)
		if got.err != "" || len(got.results) != 1 || int32(got.results[0]) != s.want {
			t.Errorf("%s%v: %+v, want %d", s.call.name, s.call.args, got, s.want)
		}
	}

	for _, budget := range []uint64{65536, 65536 + 15} {
		_, err := Instrument(wasm, Options{MemoryBudget: budget})
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "65536 bytes of memory") {
			t.Errorf("budget %d: %v, want a refusal naming the numbers", budget, err)
		}
	}
	if _, err := Instrument(wasm, Options{MemoryBudget: 65536 + 16}); err != nil {
		t.Errorf("budget at the declared minimums: %v", err)
	}
}

func TestRedirect(t *testing.T) {
	m := newMod()
	out := m.importFunc("extism:host/env", "output_set", i64, none)
	m.importFunc("extism:host/env", "length", i64, i64)
	m.exportFn("f", m.fn(none, none, nil, i64c(1), call(out)))
	metered := mustInstrument(t, m.bytes(), Options{Redirect: map[Import]string{
		{"extism:host/env", "output_set"}: "anvil:kernel",
		{"extism:host/env", "missing"}:    "anvil:kernel",
	}})
	r := wazero.NewRuntime(t.Context())
	defer r.Close(t.Context())
	compiled, err := r.CompileModule(t.Context(), metered)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		got = append(got, module+"."+name)
	}
	want := "anvil:kernel.output_set extism:host/env.length anvil:host/meter.enter anvil:host/meter.yield anvil:host/meter.leave"
	if strings.Join(got, " ") != want {
		t.Errorf("imports %v, want %s", got, want)
	}
}

func TestNamesFollowTheirFunctions(t *testing.T) {
	metered := mustInstrument(t, named().bytes(), Options{})
	in, err := instantiate(t, metered, &meter{grant: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	_, err = in.mod.ExportedFunction("outer").Call(t.Context(), 0)
	if err == nil {
		t.Fatal("outer(0) did not trap")
	}
	trace := err.Error()
	for _, want := range []string{".inner(", ".outer(", ".outer$meter("} {
		if !strings.Contains(trace, want) {
			t.Errorf("stack trace lacks %q:\n%s", want, trace)
		}
	}
}

// Every module the tests build must still validate after the rewrite, with
// and without a memory budget.
func TestBuiltModulesValidate(t *testing.T) {
	extra := []*tmod{callTree(45)}
	for _, c := range moduleCases() {
		extra = append(extra, c.build())
	}
	for i, m := range extra {
		for _, opts := range []Options{{}, {MemoryBudget: 1 << 32}} {
			in, err := instantiate(t, mustInstrument(t, m.bytes(), opts), &meter{grant: 1 << 40})
			if err != nil {
				t.Errorf("module %d: %v", i, err)
				continue
			}
			in.close()
		}
	}
}

// buildGoGuest builds the textcheck example plugin for wasip1, as
// scripts/build-plugins does, or skips.
func buildGoGuest(t testing.TB) []byte {
	t.Helper()
	if p := os.Getenv("WASMMETER_GO_GUEST"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	testkit.Long(t, "builds a Go guest")
	out := filepath.Join(t.TempDir(), "textcheck.wasm")
	if _, err := testkit.BuildGuest(t.Context(), "../../../examples/plugins/textcheck/wasm", out); err != nil {
		t.Skipf("cannot build the Go guest: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoGuestValidates(t *testing.T) {
	testkit.Long(t, "builds a Go guest")
	wasm := buildGoGuest(t)
	for _, opts := range []Options{{}, {MemoryBudget: 1 << 30}} {
		metered := mustInstrument(t, wasm, opts)
		if len(metered) > outputFactor*len(wasm) {
			t.Errorf("metered Go guest has %d bytes for %d", len(metered), len(wasm))
		}
		t.Logf("%d bytes -> %d bytes", len(wasm), len(metered))
		compileOnly(t, metered)
	}
}

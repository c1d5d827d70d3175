package wasmmeter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agentanvil/anvil/host/internal/wazero"
	"github.com/agentanvil/anvil/host/internal/wazero/api"
	"github.com/agentanvil/anvil/host/internal/wazero/experimental"
	"github.com/agentanvil/anvil/host/internal/wazero/sys"
)

// The differential runs a module as it is and as Instrument rewrites it, on
// the host's copy of wazero with its optimizing compiler (the engine plugins
// run on), and compares what each export call did.
//
// Bounding the original. WithCloseOnContextDone stops a call only at loop
// headers (in both of wazero's engines: the interpreter's check is the same
// loop-header operation), so a module whose work is a call tree — f calls g
// twice, g calls h twice, … — is never stopped by it, and on the compiler it
// would hold its thread in native code for good. So the original is compiled
// with a function listener that refuses to enter any function once the
// call's context is done: every unbounded execution passes either a loop
// header or a function entry, and the call returns within a function body's
// worth of work after its deadline. The listener makes the original's code
// exit to Go at every call, which costs time but changes nothing it
// computes.
//
// The instrumented side is stopped by the meter alone: its yield refuses to
// continue once the deadline has passed. Its runtime also closes on context
// done, at a later deadline, so that a meter that misses a loop is caught
// (and named) rather than hanging; a call tree the meter misses is caught by
// the watchdog, which saves the module and ends the test process (a
// goroutine running compiled guest code cannot be abandoned).

// verdict is what the differential concluded about one module.
type verdict int

const (
	verdictRejected     verdict = iota // wazero rejects the original: nothing to compare
	verdictFinished                    // every call of the original finished and the instrumented did the same
	verdictStopped                     // the original hit its deadline and the meter stopped the instrumented
	verdictInconclusive                // a stack overflow: how deep a stack goes is not part of what a module computes
)

func (v verdict) String() string {
	return [...]string{"rejected", "finished", "stopped", "inconclusive"}[v]
}

type stepKind int

const (
	stepReturned        stepKind = iota
	stepTrapped                  // a Wasm trap (or any other error the call returned)
	stepStopped                  // the original: its deadline; the instrumented: the meter's yield refused
	stepStoppedByEngine          // the instrumented only: close-on-context-done stopped it, the meter did not
)

func (k stepKind) String() string {
	return [...]string{"returned", "trapped", "stopped", "stopped by close-on-context-done"}[k]
}

// step is one instantiation or one export call.
type step struct {
	name    string // the export; "" for instantiation (the start function)
	kind    stepKind
	results []uint64
	types   []api.ValueType // of results, one per uint64 (a v128 takes two)
	trap    string          // the error's first line
	elapsed time.Duration
	yields  int
}

func (s step) what() string {
	if s.name == "" {
		return "instantiation"
	}
	return fmt.Sprintf("export %q", s.name)
}

type globalValue struct {
	typ api.ValueType
	val uint64
}

// sideRun is one side's run of a module: its steps in order, then (when
// every step finished) its exported memories and globals.
type sideRun struct {
	steps    []step
	memories map[string][]byte
	globals  map[string]globalValue
}

var (
	errOriginalStopped = errors.New("smith test: the original's deadline passed")
	errMeterStopped    = errors.New("smith test: the meter's yield refused after the deadline")
)

// meterState is the host's side of the meter for one call.
type meterState struct {
	deadline      time.Time
	enters        int
	yields        int
	leaves        int
	stoppedByHost bool
}

type meterStateKey struct{}

// meterChunk is the fuel each enter and yield grants: ample (a call is
// never out of fuel) yet small enough that yield, where the deadline is
// checked, comes about every millisecond.
const meterChunk = 1 << 20

func meterStateOf(ctx context.Context) *meterState {
	st, ok := ctx.Value(meterStateKey{}).(*meterState)
	if !ok {
		// A meter import called with a context the harness did not make.
		panic("smith test: meter import called without a meterState")
	}
	return st
}

type differ struct {
	orig, inst wazero.Runtime
	deadline   time.Duration // the original's per-step deadline; the meter gets twice that
	// engineGrace is how long after the meter's deadline close-on-context-done
	// stops the instrumented side (defaultEngineGrace).
	engineGrace time.Duration
	// instrument rewrites a module: instrumentNoPanic, or in the harness's
	// own tests a rewriter known to be wrong.
	instrument func([]byte) ([]byte, error)
	// onHang is called when a step outlives every bound; it does not return.
	onHang func(what string)
}

// defaultEngineGrace is how long after the meter's deadline
// close-on-context-done stops the instrumented side, and hangGrace how long
// after that the watchdog gives up on a step.
const (
	defaultEngineGrace = 5 * time.Second
	hangGrace          = 15 * time.Second
)

func newDiffer(ctx context.Context, deadline time.Duration) (*differ, error) {
	config := wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true)
	d := &differ{
		orig:        wazero.NewRuntimeWithConfig(ctx, config),
		inst:        wazero.NewRuntimeWithConfig(ctx, config),
		deadline:    deadline,
		engineGrace: defaultEngineGrace,
		instrument:  instrumentNoPanic,
	}
	_, err := d.inst.NewHostModuleBuilder(ImportModule).
		NewFunctionBuilder().WithFunc(func(ctx context.Context, outer int64) int64 {
		meterStateOf(ctx).enters++
		return meterChunk
	}).Export(EnterName).
		NewFunctionBuilder().WithFunc(func(ctx context.Context, remaining int64) int64 {
		st := meterStateOf(ctx)
		st.yields++
		if time.Now().After(st.deadline) {
			st.stoppedByHost = true
			panic(errMeterStopped)
		}
		return meterChunk
	}).Export(YieldName).
		NewFunctionBuilder().WithFunc(func(ctx context.Context, remaining int64) int64 {
		meterStateOf(ctx).leaves++
		return remaining
	}).Export(LeaveName).
		Instantiate(ctx)
	if err != nil {
		d.close(ctx)
		return nil, fmt.Errorf("instantiating the test's %s host module: %w", ImportModule, err)
	}
	return d, nil
}

func (d *differ) close(ctx context.Context) {
	d.orig.Close(ctx)
	d.inst.Close(ctx)
}

// withStopAtDeadline makes a module compiled with ctx refuse to enter any
// function once its call's context is done (see the top of this file).
func withStopAtDeadline(ctx context.Context) context.Context {
	return experimental.WithFunctionListenerFactory(ctx, stopAtDeadline)
}

var stopAtDeadline = experimental.FunctionListenerFactoryFunc(func(api.FunctionDefinition) experimental.FunctionListener {
	return experimental.FunctionListenerFunc(func(ctx context.Context, _ api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
		if ctx.Err() != nil {
			panic(errOriginalStopped)
		}
	})
})

// check runs the differential on one module. It returns an error only for a
// finding: the rewriter failed, produced an invalid module, or changed what
// the module does.
func (d *differ) check(ctx context.Context, wasm []byte) (verdict, error) {
	origCompiled, err := d.orig.CompileModule(withStopAtDeadline(ctx), wasm)
	if err != nil {
		return verdictRejected, nil
	}
	defer origCompiled.Close(ctx)

	instrumented, err := d.instrument(wasm)
	if err != nil {
		return verdictRejected, fmt.Errorf("Instrument refused a module wazero accepts: %w", err)
	}
	instCompiled, err := d.inst.CompileModule(ctx, instrumented)
	if err != nil {
		return verdictRejected, fmt.Errorf("wazero rejects the instrumented module: %w", err)
	}
	defer instCompiled.Close(ctx)
	for _, imp := range instCompiled.ImportedFunctions() {
		mod, name, _ := imp.Import()
		if mod != ImportModule || (name != EnterName && name != YieldName && name != LeaveName) {
			return verdictRejected, fmt.Errorf("the instrumented module imports %s.%s, a module without imports should import only the meter", mod, name)
		}
	}
	if n := len(instCompiled.ImportedMemories()); n != 0 {
		return verdictRejected, fmt.Errorf("the instrumented module imports %d memories, the original none", n)
	}

	exports, err := readExports(wasm)
	if err != nil {
		return verdictRejected, fmt.Errorf("smith test: %w", err)
	}
	orig := d.run(ctx, origCompiled, exports, false, d.deadline)
	inst := d.run(ctx, instCompiled, exports, true, 2*d.deadline)
	v, err, longer := compareRuns(orig, inst, false, d.engineGrace)
	if longer {
		// The original hit its deadline where the instrumented finished
		// within twice that: a slow machine, or the instrumented module
		// computing something else. Ten times the deadline tells which.
		orig = d.run(ctx, origCompiled, exports, false, 10*d.deadline)
		v, err, _ = compareRuns(orig, inst, true, d.engineGrace)
	}
	return v, err
}

// instrumentNoPanic is Instrument, with a panic (which would crash the
// host) turned into a finding.
func instrumentNoPanic(wasm []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Instrument panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return Instrument(wasm, Options{MemoryBudget: 64 << 20})
}

// run instantiates a compiled module and calls each exported function once
// with zero arguments, in export order, until one is stopped; then, if
// none was, it reads the exported memories and globals.
func (d *differ) run(ctx context.Context, compiled wazero.CompiledModule, exports []wasmExport, metered bool, deadline time.Duration) sideRun {
	var run sideRun
	var mod api.Module
	side := "original"
	if metered {
		side = "instrumented"
	}
	do := func(name string, call func(context.Context) ([]uint64, error)) step {
		s := step{name: name}
		var st *meterState
		callCtx, cancel := context.WithTimeout(ctx, deadline)
		if metered {
			st = &meterState{deadline: time.Now().Add(deadline)}
			cancel()
			callCtx, cancel = context.WithTimeout(context.WithValue(ctx, meterStateKey{}, st), deadline+d.engineGrace)
		}
		defer cancel()
		var results []uint64
		var err error
		start := time.Now()
		d.bounded(fmt.Sprintf("%s module, %s", side, s.what()), deadline+d.engineGrace+hangGrace, func() {
			results, err = call(callCtx)
		})
		s.elapsed = time.Since(start)
		if st != nil {
			s.yields = st.yields
		}
		var exit *sys.ExitError
		switch {
		case err == nil:
			s.kind, s.results = stepReturned, results
		case !metered && errors.Is(err, errOriginalStopped),
			!metered && errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
			s.kind = stepStopped
		case metered && st.stoppedByHost && errors.Is(err, errMeterStopped):
			s.kind = stepStopped
		case metered && errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
			s.kind = stepStoppedByEngine
		default:
			s.kind = stepTrapped
			s.trap = trapKind(err)
		}
		run.steps = append(run.steps, s)
		return s
	}

	s := do("", func(ctx context.Context) ([]uint64, error) {
		m, err := d.runtime(metered).InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		mod = m
		return nil, err
	})
	if s.kind != stepReturned {
		return run
	}
	defer mod.Close(ctx)
	for _, e := range exports {
		if e.kind != exportFunc {
			continue
		}
		fn := mod.ExportedFunction(e.name)
		if fn == nil {
			run.steps = append(run.steps, step{name: e.name, kind: stepTrapped, trap: "no such export"})
			continue
		}
		def := fn.Definition()
		params := make([]uint64, len(slotTypes(def.ParamTypes())))
		s := do(e.name, func(ctx context.Context) ([]uint64, error) { return fn.Call(ctx, params...) })
		run.steps[len(run.steps)-1].types = slotTypes(def.ResultTypes())
		if s.kind != stepReturned && s.kind != stepTrapped {
			return run
		}
	}
	run.memories = map[string][]byte{}
	run.globals = map[string]globalValue{}
	for _, e := range exports {
		switch e.kind {
		case exportMemory:
			if m := mod.ExportedMemory(e.name); m != nil {
				b, _ := m.Read(0, m.Size())
				run.memories[e.name] = bytes.Clone(b)
			}
		case exportGlobal:
			if g := mod.ExportedGlobal(e.name); g != nil {
				run.globals[e.name] = globalValue{typ: g.Type(), val: g.Get()}
			}
		}
	}
	return run
}

func (d *differ) runtime(metered bool) wazero.Runtime {
	if metered {
		return d.inst
	}
	return d.orig
}

// bounded runs f, and calls onHang if it has not returned within limit. f
// runs on a goroutine of its own only so that the wait can be bounded.
func (d *differ) bounded(what string, limit time.Duration, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		d.onHang(fmt.Sprintf("%s has not returned %v after it started", what, limit))
	}
}

const valueTypeV128 api.ValueType = 0x7b
const valueTypeFuncref api.ValueType = 0x70

// slotTypes lists the type of each uint64 wazero passes for these values:
// a v128 takes two.
func slotTypes(types []api.ValueType) []api.ValueType {
	slots := make([]api.ValueType, 0, len(types))
	for _, t := range types {
		slots = append(slots, t)
		if t == valueTypeV128 {
			slots = append(slots, t)
		}
	}
	return slots
}

// sameValue compares two values of a type the way Wasm's semantics allow:
// any NaN equals any NaN (the payload of a NaN an operation makes is not
// determined), and references only by being null or not (a non-null
// reference is an address in the instance, different on each side).
func sameValue(t api.ValueType, a, b uint64) bool {
	switch t {
	case api.ValueTypeF32:
		fa, fb := math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b))
		if fa != fa && fb != fb {
			return true
		}
		return uint32(a) == uint32(b)
	case api.ValueTypeF64:
		fa, fb := math.Float64frombits(a), math.Float64frombits(b)
		if fa != fa && fb != fb {
			return true
		}
		return a == b
	case api.ValueTypeExternref, valueTypeFuncref:
		return (a == 0) == (b == 0)
	default:
		return a == b
	}
}

// trapKind is what of an error the two sides must agree on: the first line,
// from "wasm error:" on when it has that. What comes before it names the
// function by index and export name, and the rewrite adds imports (so
// indices shift) and exports wrappers under the original names (so wazero
// names an unwrapped function, such as the start function, by another of
// its exports or by none).
func trapKind(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	if i := strings.Index(line, "wasm error: "); i >= 0 {
		return line[i:]
	}
	return line
}

func isStackOverflow(s step) bool {
	return s.kind == stepTrapped && strings.Contains(s.trap, "stack overflow")
}

// compareRuns compares the original's run with the instrumented one's. It
// returns a finding as an error; longer asks for the original to be run
// again with a longer deadline (see check), unless recheck says it was.
func compareRuns(orig, inst sideRun, recheck bool, engineGrace time.Duration) (v verdict, finding error, longer bool) {
	for i, o := range orig.steps {
		if i >= len(inst.steps) {
			return verdictFinished, fmt.Errorf("%s: the instrumented module never got there (%d steps, the original %d)", o.what(), len(inst.steps), len(orig.steps)), false
		}
		n := inst.steps[i]
		if o.name != n.name {
			return verdictFinished, fmt.Errorf("step %d: the original ran %s, the instrumented %s", i, o.what(), n.what()), false
		}
		switch {
		case o.kind == stepStopped && n.kind == stepStopped:
			return verdictStopped, nil, false
		case o.kind == stepStopped && n.kind == stepStoppedByEngine:
			return verdictStopped, fmt.Errorf("%s: the meter did not stop it; close-on-context-done did, %v after the meter's deadline (%d yields)", o.what(), engineGrace, n.yields), false
		case o.kind == stepStopped && !recheck:
			return verdictStopped, nil, true
		case o.kind == stepStopped:
			return verdictStopped, fmt.Errorf("%s: the instrumented module %s in %v, the original did not finish in %v", o.what(), n.kind, n.elapsed, o.elapsed), false
		case n.kind == stepStopped || n.kind == stepStoppedByEngine:
			return verdictStopped, fmt.Errorf("%s: the original %s in %v, the instrumented module was %s after %v (%d yields)", o.what(), o.kind, o.elapsed, n.kind, n.elapsed, n.yields), false
		case isStackOverflow(o) || isStackOverflow(n):
			return verdictInconclusive, nil, false
		case o.kind != n.kind:
			return verdictFinished, fmt.Errorf("%s: the original %s%s, the instrumented module %s%s", o.what(), o.kind, trapSuffix(o), n.kind, trapSuffix(n)), false
		case o.kind == stepTrapped && o.trap != n.trap:
			return verdictFinished, fmt.Errorf("%s: the original trapped with %q, the instrumented module with %q", o.what(), o.trap, n.trap), false
		case o.kind == stepReturned:
			if len(o.results) != len(n.results) {
				return verdictFinished, fmt.Errorf("%s: the original returned %d values, the instrumented module %d", o.what(), len(o.results), len(n.results)), false
			}
			for j := range o.results {
				if !sameValue(o.types[j], o.results[j], n.results[j]) {
					return verdictFinished, fmt.Errorf("%s: result slot %d (%s): the original returned %#x, the instrumented module %#x", o.what(), j, api.ValueTypeName(o.types[j]), o.results[j], n.results[j]), false
				}
			}
		}
	}
	if len(inst.steps) != len(orig.steps) {
		return verdictFinished, fmt.Errorf("the instrumented module ran %d steps, the original %d", len(inst.steps), len(orig.steps)), false
	}
	if orig.memories == nil {
		// The original never instantiated: nothing more to compare.
		return verdictFinished, nil, false
	}
	for name, om := range orig.memories {
		nm, ok := inst.memories[name]
		switch {
		case !ok:
			return verdictFinished, fmt.Errorf("memory export %q: missing from the instrumented module", name), false
		case len(om) != len(nm):
			return verdictFinished, fmt.Errorf("memory export %q: %d bytes in the original at the end, %d in the instrumented module", name, len(om), len(nm)), false
		case !bytes.Equal(om, nm):
			at := 0
			for at < len(om) && om[at] == nm[at] {
				at++
			}
			return verdictFinished, fmt.Errorf("memory export %q: first difference at byte %#x: %#x in the original, %#x in the instrumented module", name, at, om[at], nm[at]), false
		}
	}
	for name, og := range orig.globals {
		ng, ok := inst.globals[name]
		switch {
		case !ok:
			return verdictFinished, fmt.Errorf("global export %q: missing from the instrumented module", name), false
		case og.typ != ng.typ:
			return verdictFinished, fmt.Errorf("global export %q: %s in the original, %s in the instrumented module", name, api.ValueTypeName(og.typ), api.ValueTypeName(ng.typ)), false
		case !sameValue(og.typ, og.val, ng.val):
			return verdictFinished, fmt.Errorf("global export %q (%s): %#x at the end in the original, %#x in the instrumented module", name, api.ValueTypeName(og.typ), og.val, ng.val), false
		}
	}
	return verdictFinished, nil, false
}

func trapSuffix(s step) string {
	if s.kind == stepTrapped {
		return fmt.Sprintf(" (%s)", s.trap)
	}
	return ""
}

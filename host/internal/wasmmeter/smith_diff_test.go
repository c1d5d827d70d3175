package wasmmeter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentanvil/anvil/host/internal/cputime"
)

// The differential runs a module as it is and as Instrument rewrites it, on
// wazero with its optimizing compiler (the engine plugins
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
// worth of work after its budget is spent. The listener makes the
// original's code exit to Go at every call, which costs time but changes
// nothing it computes. (The call tree hangs the interpreter too: checked by
// hand with a 2^40-call tree, which neither engine stopped in 3 s.)
//
// The instrumented side is stopped by the meter alone: its yield refuses to
// continue once the budget is spent. Its runtime also closes on context
// done, some seconds later, so that a meter that misses a loop is caught
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
	cpu     time.Duration // the process's CPU time during the step
	yields  int
	// protocol is the first way the instrumented module broke the meter's
	// calling convention in this step, if it did.
	protocol string
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
	spent         *atomic.Bool // the step's budget (watchBudget)
	grant         int64
	enters        int
	yields        int
	leaves        int
	stoppedByHost bool
	protocol      string
}

type meterStateKey struct{}

// grantFor is the fuel each enter and yield grants in a module's run. Fuel
// is always ample, since every yield refills it; the grant decides how
// often yield comes. With 2^20 it comes about every millisecond, where the
// deadline is checked; with 1 at nearly every check point, so that the
// code around each call to yield (the operand stack kept across it, the
// counter restored) runs in the middle of real work, not only once a call
// has gone on for long. Chosen by the module's hash so that a crasher
// replays with the grant it was found with.
func grantFor(wasm []byte) int64 {
	sum := sha256.Sum256(wasm)
	return [...]int64{1, 17, 1000, 1 << 20}[sum[0]%4]
}

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
	// deadline is the original's CPU budget per step (watchBudget); the
	// instrumented module gets twice that.
	deadline time.Duration
	// engineGrace is how long after the step's wall bound
	// close-on-context-done stops the instrumented side (defaultEngineGrace).
	engineGrace time.Duration
	// instrument rewrites a module: instrumentNoPanic, or in the harness's
	// own tests a rewriter known to be wrong.
	instrument func([]byte) ([]byte, error)
	// protocol checks that the instrumented module keeps the meter's calling
	// convention; off only for the rewriters of the harness's own tests,
	// which do not call the meter.
	protocol bool
	// onHang is called when a step outlives every bound; it does not return.
	onHang func(what string)
}

// defaultEngineGrace is how long after the step's wall bound
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
		protocol:    true,
	}
	_, err := d.inst.NewHostModuleBuilder(ImportModule).
		NewFunctionBuilder().WithFunc(func(ctx context.Context, outer int64) int64 {
		st := meterStateOf(ctx)
		st.enters++
		return st.grant
	}).Export(EnterName).
		NewFunctionBuilder().WithFunc(func(ctx context.Context, remaining int64) int64 {
		st := meterStateOf(ctx)
		st.yields++
		if remaining >= 0 && st.protocol == "" {
			st.protocol = fmt.Sprintf("yield called with %d fuel remaining; it is for a counter below zero", remaining)
		}
		if st.spent.Load() {
			st.stoppedByHost = true
			panic(errMeterStopped)
		}
		return st.grant
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
	grant := grantFor(wasm)
	orig := d.run(ctx, origCompiled, exports, grant, false, d.deadline)
	inst := d.run(ctx, instCompiled, exports, grant, true, 2*d.deadline)
	v, err, again := compareRuns(orig, inst, false, d.engineGrace)
	switch again {
	case againOriginal:
		// The original hit its deadline where the instrumented module
		// finished within twice that: a slow machine, or the instrumented
		// module computing something else. Ten times the deadline tells.
		orig = d.run(ctx, origCompiled, exports, grant, false, 10*d.deadline)
		v, err, _ = compareRuns(orig, inst, true, d.engineGrace)
	case againInstrumented:
		// The other way round: the metered code is slower, more so with a
		// grant of 1 (a call to the host at nearly every check point).
		inst = d.run(ctx, instCompiled, exports, grant, true, 20*d.deadline)
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
//
// Each step may spend budget of the process's CPU time, or wallBudgets
// times that in wall time, before it counts as stopped (watchBudget).
func (d *differ) run(ctx context.Context, compiled wazero.CompiledModule, exports []wasmExport, grant int64, metered bool, budget time.Duration) sideRun {
	var run sideRun
	var mod api.Module
	side := "original"
	if metered {
		side = "instrumented"
	}
	do := func(name string, call func(context.Context) ([]uint64, error)) step {
		s := step{name: name}
		var st *meterState
		wall := wallBudgets * budget
		budgetCtx, spent, stopWatch := watchBudget(ctx, budget, wall)
		defer stopWatch()
		// The original is stopped by the budget's context; the instrumented
		// module by the meter alone, close-on-context-done only engineGrace
		// later.
		callCtx := budgetCtx
		if metered {
			st = &meterState{spent: spent, grant: grant}
			var cancel context.CancelFunc
			callCtx, cancel = context.WithTimeout(context.WithValue(ctx, meterStateKey{}, st), wall+d.engineGrace)
			defer cancel()
		}
		var results []uint64
		var err error
		start, cpuStart := time.Now(), cputime.Process()
		d.bounded(fmt.Sprintf("%s module, %s", side, s.what()), wall+d.engineGrace+hangGrace, func() {
			results, err = call(callCtx)
		})
		s.elapsed, s.cpu = time.Since(start), cputime.Process()-cpuStart
		if st != nil {
			s.yields, s.protocol = st.yields, st.protocol
			// An export's wrapper calls enter first and leave when the
			// export returns; the start function is not wrapped.
			if d.protocol && s.protocol == "" && err == nil && name != "" && (st.enters == 0 || st.enters != st.leaves) {
				s.protocol = fmt.Sprintf("the export returned after %d calls of enter and %d of leave", st.enters, st.leaves)
			}
		}
		var exit *sys.ExitError
		switch {
		case err == nil:
			s.kind, s.results = stepReturned, results
		case !metered && errors.Is(err, errOriginalStopped),
			!metered && errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled:
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
			// Of a v128 global, wazero's API gives the low half only.
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

// wallBudgets is how many times its CPU budget a step may take in wall
// time. Budgets are CPU time because this machine is shared: with a load of
// 8 to 10 on 2 cores (other work), a call that takes 0.4 s alone took over
// 6 s of wall time, and a wall-clock deadline stopped calls that finish.
const wallBudgets = 20

// budgetPoll is how often watchBudget reads the process's CPU time.
const budgetPoll = 5 * time.Millisecond

// watchBudget returns a context that is cancelled, and a flag that is set,
// once the process has spent cpu of CPU time (all its threads: the garbage
// collector's too) or wall has passed since the call; stop ends the watch.
func watchBudget(parent context.Context, cpu, wall time.Duration) (_ context.Context, spent *atomic.Bool, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	spent = new(atomic.Bool)
	done := make(chan struct{})
	start, cpuStart := time.Now(), cputime.Process()
	go func() {
		ticker := time.NewTicker(budgetPoll)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				if cputime.Process()-cpuStart > cpu || time.Since(start) > wall {
					spent.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	return ctx, spent, func() {
		close(done)
		cancel()
	}
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

// again is the side compareRuns asks to be run again with a longer
// deadline, when one side was stopped where the other finished.
type again int

const (
	againNeither again = iota
	againOriginal
	againInstrumented
)

// compareRuns compares the original's run with the instrumented one's. It
// returns a finding as an error, or asks for a side to be run again (see
// check) unless recheck says this is that second run.
func compareRuns(orig, inst sideRun, recheck bool, engineGrace time.Duration) (v verdict, finding error, _ again) {
	for i, o := range orig.steps {
		if i >= len(inst.steps) {
			return verdictFinished, fmt.Errorf("%s: the instrumented module never got there (%d steps, the original %d)", o.what(), len(inst.steps), len(orig.steps)), againNeither
		}
		n := inst.steps[i]
		if o.name != n.name {
			return verdictFinished, fmt.Errorf("step %d: the original ran %s, the instrumented %s", i, o.what(), n.what()), againNeither
		}
		if n.protocol != "" {
			return verdictFinished, fmt.Errorf("%s: %s", n.what(), n.protocol), againNeither
		}
		switch {
		case o.kind == stepStopped && n.kind == stepStopped:
			return verdictStopped, nil, againNeither
		case o.kind == stepStopped && n.kind == stepStoppedByEngine:
			return verdictStopped, fmt.Errorf("%s: the meter did not stop it; close-on-context-done did, %v after the step's wall bound (%d yields)", o.what(), engineGrace, n.yields), againNeither
		case o.kind == stepStopped && !recheck:
			return verdictStopped, nil, againOriginal
		case o.kind == stepStopped:
			return verdictStopped, fmt.Errorf("%s: the instrumented module %s in %v (%v CPU), the original did not finish in %v (%v CPU)", o.what(), n.kind, n.elapsed, n.cpu, o.elapsed, o.cpu), againNeither
		case n.kind == stepStopped && !recheck:
			return verdictStopped, nil, againInstrumented
		case n.kind == stepStopped || n.kind == stepStoppedByEngine:
			return verdictStopped, fmt.Errorf("%s: the original %s in %v (%v CPU), the instrumented module was %s after %v (%v CPU, %d yields)", o.what(), o.kind, o.elapsed, o.cpu, n.kind, n.elapsed, n.cpu, n.yields), againNeither
		case isStackOverflow(o) || isStackOverflow(n):
			return verdictInconclusive, nil, againNeither
		case o.kind != n.kind:
			return verdictFinished, fmt.Errorf("%s: the original %s%s, the instrumented module %s%s", o.what(), o.kind, trapSuffix(o), n.kind, trapSuffix(n)), againNeither
		case o.kind == stepTrapped && o.trap != n.trap:
			return verdictFinished, fmt.Errorf("%s: the original trapped with %q, the instrumented module with %q", o.what(), o.trap, n.trap), againNeither
		case o.kind == stepReturned:
			if len(o.results) != len(n.results) {
				return verdictFinished, fmt.Errorf("%s: the original returned %d values, the instrumented module %d", o.what(), len(o.results), len(n.results)), againNeither
			}
			for j := range o.results {
				if !sameValue(o.types[j], o.results[j], n.results[j]) {
					return verdictFinished, fmt.Errorf("%s: result slot %d (%s): the original returned %#x, the instrumented module %#x", o.what(), j, api.ValueTypeName(o.types[j]), o.results[j], n.results[j]), againNeither
				}
			}
		}
	}
	if len(inst.steps) != len(orig.steps) {
		return verdictFinished, fmt.Errorf("the instrumented module ran %d steps, the original %d", len(inst.steps), len(orig.steps)), againNeither
	}
	if orig.memories == nil {
		// The original never instantiated: nothing more to compare.
		return verdictFinished, nil, againNeither
	}
	for name, om := range orig.memories {
		nm, ok := inst.memories[name]
		switch {
		case !ok:
			return verdictFinished, fmt.Errorf("memory export %q: missing from the instrumented module", name), againNeither
		case len(om) != len(nm):
			return verdictFinished, fmt.Errorf("memory export %q: %d bytes in the original at the end, %d in the instrumented module", name, len(om), len(nm)), againNeither
		case !bytes.Equal(om, nm):
			at := 0
			for at < len(om) && om[at] == nm[at] {
				at++
			}
			return verdictFinished, fmt.Errorf("memory export %q: first difference at byte %#x: %#x in the original, %#x in the instrumented module", name, at, om[at], nm[at]), againNeither
		}
	}
	for name, og := range orig.globals {
		ng, ok := inst.globals[name]
		switch {
		case !ok:
			return verdictFinished, fmt.Errorf("global export %q: missing from the instrumented module", name), againNeither
		case og.typ != ng.typ:
			return verdictFinished, fmt.Errorf("global export %q: %s in the original, %s in the instrumented module", name, api.ValueTypeName(og.typ), api.ValueTypeName(ng.typ)), againNeither
		case !sameValue(og.typ, og.val, ng.val):
			return verdictFinished, fmt.Errorf("global export %q (%s): %#x at the end in the original, %#x in the instrumented module", name, api.ValueTypeName(og.typ), og.val, ng.val), againNeither
		}
	}
	return verdictFinished, nil, againNeither
}

func trapSuffix(s step) string {
	if s.kind == stepTrapped {
		return fmt.Sprintf(" (%s)", s.trap)
	}
	return ""
}

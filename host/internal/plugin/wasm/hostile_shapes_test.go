package wasm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/duration"
	"github.com/agentanvil/anvil/host/internal/plugin/internal/plugintest"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/host/internal/wasmtest"
	"github.com/agentanvil/anvil/internal/testkit"
)

// Hand-assembled hostile guests (asm_test.go): shapes of work a Go guest
// cannot have, which the host must still stop at the deadline. wazero
// checks whether a call's module was closed only at loop headers, and Go
// cannot preempt a goroutine running compiled guest code, so guest code
// without a loop (a call tree, deep recursion, a huge straight-line body,
// a bulk memory operation per call) is not stopped by its deadline, and a
// garbage collection that starts meanwhile (its stop-the-world waits for
// every goroutine) freezes the whole host.
//
// A frozen process cannot fail a test — its own timers stop with it — so
// each case runs in a child process (this test binary, re-executed: see
// init below) which reports each step as it passes it; the parent gives
// every step a bound and kills the child when one is not reported in time.
// The child also caps its address space, so a guest that makes the host
// allocate tens of GiB ends the child, not the machine.

// shapeDeadline is the attack's per-call deadline.
const shapeDeadline = 200 * time.Millisecond

// shapeStepBound is how long the parent waits for the child's next step:
// a bound, far above what any step needs, not a synchronisation.
const shapeStepBound = 20 * time.Second

// shapeLoadBound bounds loading: compiling a cold module, and a describe
// attack's own deadline (warm() gives anvil_describe at least MinWarmup).
const shapeLoadBound = transport.MinWarmup + 30*time.Second

// shapeFrozen: a child whose heartbeat (every 100 ms) has been silent
// this long is frozen, not merely busy.
const shapeFrozen = 3 * time.Second

// shapeRSSBound is the most the child's resident memory may grow (its
// peak, over what it was before the call) while an attack runs.
const shapeRSSBound = 1 << 30

// Answers of the table_grow_huge guest.
const (
	answerRefused = "table.grow returned -1"
	answerGrown   = "table.grow grew the table"
)

// shapeCase is one attack: the module, and what the host must make of it.
type shapeCase struct {
	name   string
	module func() []byte
	// loadFails: the attack runs at load (anvil_describe) or the module
	// must be refused there; want then checks the load error.
	loadFails bool
	// want checks the attack's outcome (the load's, when loadFails).
	want func(r *shapeReport) error
	// noAttack: the module is refused before any of its code runs, so
	// there is no running attack to overlap.
	noAttack bool
	// rss: the child's resident memory may peak at most this much above
	// its level before the call (Linux only); 0: not checked.
	rss int64
}

var shapeCases = []shapeCase{
	{name: "calltree", module: calltreeModule(false), want: wantCode(abi.CodeTimeout)},
	{name: "calltree_describe", module: calltreeModule(true), loadFails: true, want: wantLoadTimeout},
	{name: "mutual", module: mutualModule, want: wantCode(abi.CodeTimeout)},
	{name: "straightline", module: straightlineModule, want: wantCode(abi.CodeTimeout)},
	{name: "fill_loop", module: fillLoopModule, want: wantCode(abi.CodeTimeout)},
	{name: "fill_leaves", module: fillLeavesModule, want: wantCode(abi.CodeTimeout)},
	// A guest corrupting the kernel's block table is refused when it
	// writes the header (the kernel's code is not metered: its data must
	// stay intact), before the kernel can walk the corrupt table forever.
	{name: "kernel_header", module: kernelHeaderModule, want: wantError(abi.CodeABI, "outside every block the guest holds")},
	// table.grow past the memory budget is refused (-1); a guest looping
	// on it runs into its deadline, and the host's memory stays bounded.
	// (Today the deadline alone bounds the loop: its tables reach
	// ~300-400 MiB in 200 ms on the two-core machine, under the bound.)
	{name: "table_grow", module: tableGrowLoopModule, want: wantCode(abi.CodeTimeout), rss: shapeRSSBound},
	{name: "table_grow_huge", module: tableGrowHugeModule, want: wantAnswer(answerRefused), rss: shapeRSSBound},
	// memory.grow past memory_pages returns -1 (or traps); the loop then
	// runs into its deadline.
	{name: "memory_grow", module: memoryGrowModule, want: wantCode(abi.CodeTimeout, abi.CodeTrap), rss: shapeRSSBound},
	// 300 tables of 10M elements are 24 GiB of host memory at 8 bytes an
	// element: refused at load against the memory budget, before any
	// instance exists.
	// 300 are over the count of tables the rewrite accepts; 30 (2.2 GiB)
	// are within it and over the budget.
	{name: "many_tables", module: manyTablesModule(300), loadFails: true, noAttack: true, want: wantLoadRefusal("tables")},
	{name: "large_tables", module: manyTablesModule(30), loadFails: true, noAttack: true, want: wantLoadRefusal("tables", "memory budget")},
}

// TestHostileShapes runs each attack in a child process and checks, step
// by step, that the host contained it: the attack's call ended with the
// outcome its case wants within the step bound, a benign plugin on the
// same Runtime answered while the attack was running, runtime.GC()
// returned while the attack was running (a stop-the-world did not wait on
// guest code), and the process kept its memory.
func TestHostileShapes(t *testing.T) {
	testkit.Long(t, "each case runs a child process for up to a minute on a host that cannot stop it")
	if plugintest.RaceEnabled {
		t.Skip("what it checks is the host's containment, not data races; under the race detector each child compiles its guests for minutes")
	}
	for _, c := range shapeCases {
		t.Run(c.name, func(t *testing.T) {
			r := runShapeChild(t, c.name)
			if r.loadErr != nil && !c.loadFails {
				t.Fatalf("the attack module did not load: %s (a bug in the module, not a containment failure)", r.loadErr.Error)
			}
			if !c.noAttack {
				if !r.has("running") {
					t.Errorf("the guest never said it was running (child stopped after %q)", r.last())
				}
				if b := r.get("benign"); b == nil {
					t.Errorf("the benign plugin did not answer while the attack ran: %s", r.stalled("benign"))
				} else if b.Error != "" {
					t.Errorf("the benign plugin failed while the attack ran: %s", b.Error)
				}
				if g := r.get("gc"); g == nil {
					t.Errorf("runtime.GC() did not return while the attack ran: %s", r.stalled("gc"))
				}
			}
			if c.loadFails {
				if !r.has("load") {
					t.Fatalf("the load did not end: %s", r.stalled("load"))
				}
			} else if !r.has("attack") {
				t.Fatalf("the attack's Measure did not return: %s", r.stalled("attack"))
			}
			if err := c.want(r); err != nil {
				t.Error(err)
			}
			if e := r.get("attack"); e != nil && time.Duration(e.MS)*time.Millisecond > shapeDeadline+10*time.Second {
				t.Errorf("the attack's Measure took %d ms with a %s deadline", e.MS, shapeDeadline)
			}
			if c.rss != 0 {
				switch m := r.get("rss"); {
				case m == nil:
					t.Errorf("no memory report: %s", r.stalled("rss"))
				case m.Peak < 0:
					t.Log("resident memory not measured on this system")
				case m.Peak > c.rss:
					t.Errorf("resident memory peaked %d MiB above its level before the call (bound %d MiB)", m.Peak>>20, c.rss>>20)
				}
			}
			if !r.has("done") {
				t.Errorf("the child did not finish: %s", r.stalled("done"))
			}
		})
	}
}

func wantCode(codes ...abi.Code) func(*shapeReport) error {
	return func(r *shapeReport) error {
		e := r.get("attack")
		for _, c := range codes {
			if e.Code == string(c) {
				return nil
			}
		}
		if e.Code == "" {
			return fmt.Errorf("the attack returned a result (%q) after %d ms, want an error coded %v", e.Reason, e.MS, codes)
		}
		return fmt.Errorf("the attack failed with %s after %d ms, want %v: %s", e.Code, e.MS, codes, e.Error)
	}
}

func wantError(code abi.Code, msg string) func(*shapeReport) error {
	return func(r *shapeReport) error {
		if e := r.get("attack"); e.Code != string(code) || !strings.Contains(e.Error, msg) {
			return fmt.Errorf("the attack ended with %q / error %s %s after %d ms, want %s saying %q",
				e.Reason, e.Code, e.Error, e.MS, code, msg)
		}
		return nil
	}
}

func wantAnswer(reason string) func(*shapeReport) error {
	return func(r *shapeReport) error {
		if e := r.get("attack"); e.Code != "" || e.Reason != reason {
			return fmt.Errorf("the attack ended with %q / error %s %s after %d ms, want the result %q",
				e.Reason, e.Code, e.Error, e.MS, reason)
		}
		return nil
	}
}

func wantLoadTimeout(r *shapeReport) error {
	e := r.get("load")
	if e.Code != string(abi.CodeTimeout) || !strings.Contains(e.Error, "describe") {
		return fmt.Errorf("the load ended after %d ms with %q (code %q), want a describe timeout", e.MS, e.Error, e.Code)
	}
	return nil
}

func wantLoadRefusal(words ...string) func(*shapeReport) error {
	return func(r *shapeReport) error {
		e := r.get("load")
		if e.Error == "" {
			return fmt.Errorf("the module loaded (in %d ms), want it refused naming %q", e.MS, words)
		}
		for _, w := range words {
			if !strings.Contains(strings.ToLower(e.Error), w) {
				return fmt.Errorf("the load was refused but the error does not mention %q: %s", w, e.Error)
			}
		}
		return nil
	}
}

// --- the attacks ---

// calltreeModule: the call tree of wasmtest.CallTreePlugin; inDescribe
// runs it in anvil_describe, at load.
func calltreeModule(inDescribe bool) func() []byte {
	return func() []byte { return wasmtest.CallTreePlugin(inDescribe) }
}

// mutualModule: f(n) calls g(n-1) twice, g(n) calls f(n-1) twice, both
// stop at 0; f(1000): recursion 1000 deep, 2^1000 calls, no loop.
func mutualModule() []byte {
	g := wasmtest.NewGuest()
	f := g.M.NextFunc()
	body := func(other uint32) wasmtest.Code {
		c := wasmtest.Code{}.Get(0).Op(wasmtest.OpI32Eqz).Op(wasmtest.OpIf, wasmtest.BlockEmpty, wasmtest.OpReturn, wasmtest.OpEnd)
		for range 2 {
			c = c.Get(0).I32(1).Op(wasmtest.OpI32Sub).Call(other)
		}
		return c
	}
	g.M.AddFunc(wasmtest.I32, wasmtest.None, nil, body(f+1))
	g.M.AddFunc(wasmtest.I32, wasmtest.None, nil, body(f))
	return g.Finish("mutual", nil, wasmtest.Code{}.I32(1000).Call(f), []byte(`{"score":1,"reason":"the recursion ended"}`))
}

// straightlineBytes is the size of the straight-line function's body,
// under maxFunctionBytes.
const straightlineBytes = 200 << 10

// straightlineModule: one function of ~200 KiB of dependent arithmetic
// and no branch, called from a call tree 30 deep (2^30 calls of it).
func straightlineModule() []byte {
	g := wasmtest.NewGuest()
	leaf := g.M.NextFunc() + 30
	root := wasmtest.Tree(g.M, 30, leaf)
	body := wasmtest.Code{}.Get(0)
	for i := int32(0); len(body) < straightlineBytes; i++ {
		// A chain no compiler can fold: multiply, xor and rotate by
		// constants that differ at every step.
		body = body.I32(2*i + 3).Op(wasmtest.OpI32Mul).I32(i ^ 0x5a5a).Op(wasmtest.OpI32Xor).I32(i%31 + 1).Op(wasmtest.OpI32Rotl)
	}
	g.M.AddFunc(wasmtest.I32, wasmtest.I32, nil, body)
	return g.Finish("straightline", nil, wasmtest.Code{}.I32(1).Call(root).Op(wasmtest.OpDrop), []byte(`{"score":1,"reason":"the tree ended"}`))
}

const shapeMemPages = 1024 // memory_pages of every attack: 64 MiB

// fill: memory.fill of the whole memory (64 MiB) with the value on top
// of the stack... with the given value local.
func fill(c wasmtest.Code, value wasmtest.Code) wasmtest.Code {
	c = c.I32(0)
	c = append(c, value...)
	return c.I32(shapeMemPages<<16).Fc(wasmtest.FCMemoryFill, 0)
}

// fillLoopModule: a loop filling the whole 64 MiB memory twenty times an
// iteration, forever. It has a loop header, but each iteration is 1.3 GB
// of writes between two of them.
func fillLoopModule() []byte {
	g := wasmtest.NewGuest()
	g.M.Memory(shapeMemPages)
	attack := wasmtest.Code{}.Op(wasmtest.OpLoop, wasmtest.BlockEmpty)
	for i := range 20 {
		attack = fill(attack, wasmtest.Code{}.I32(int32(i)))
	}
	attack = attack.Br(0).Op(wasmtest.OpEnd)
	return g.Finish("fill-loop", nil, attack, []byte(`{"score":1,"reason":"the loop ended"}`))
}

// fillLeavesModule: a call tree 30 deep whose 2^30 leaves each fill the
// whole 64 MiB memory; no loop.
func fillLeavesModule() []byte {
	g := wasmtest.NewGuest()
	g.M.Memory(shapeMemPages)
	leaf := g.M.NextFunc() + 30
	root := wasmtest.Tree(g.M, 30, leaf)
	g.M.AddFunc(wasmtest.I32, wasmtest.I32, nil, fill(wasmtest.Code{}, wasmtest.Code{}.Get(0)).Get(0))
	return g.Finish("fill-leaves", nil, wasmtest.Code{}.I32(1).Call(root).Op(wasmtest.OpDrop), []byte(`{"score":1,"reason":"the tree ended"}`))
}

// Extism's kernel (extism-runtime.wasm, v1.7.0) keeps its allocations in
// one list of blocks, each a 12-byte header before its data: a status
// byte (0 unused, 1 active, 2 free), 3 bytes of padding, the block's size
// (u32) and its used length (u32). When an allocation does not fit in the
// memory left past the last block but the blocks already made are larger
// than it, alloc first looks for a block to reuse: it walks the list from
// the first block, stepping from a header to header+12+size (32-bit
// arithmetic), while below the allocator's position. A guest writes
// kernel memory through store_u64 wherever it likes, so it can mark its
// own block active with size 2^32-12: the step from that header wraps
// around to the same header, and the walk never ends — in the kernel,
// which today runs outside the guest's deadline (extism PATCHES.md 2).
const (
	kernelBlockHeader = 12
	kernelLoopHeader  = -kernelBlockHeader<<32 | 1 // as a u64: size 2^32-12 (bytes 4-7), status 1 active (byte 0)
	// kernelFirst fills most of the kernel's first 64 KiB page;
	// kernelSecond then does not fit in what is left of it (it would grow
	// the memory) but is smaller than the blocks made so far, so alloc
	// walks the list looking for a block to reuse.
	kernelFirst  = 40000
	kernelSecond = 30000
)

// kernelHeaderModule: alloc a block, rewrite its header, alloc again.
func kernelHeaderModule() []byte {
	g := wasmtest.NewGuest()
	attack := wasmtest.Code{}.I64(kernelFirst).Call(g.Alloc).Set(0).
		Get(0).I64(kernelBlockHeader).Op(wasmtest.OpI64Sub).I64(kernelLoopHeader).Call(g.StoreU64).
		I64(kernelSecond).Call(g.Alloc).Op(wasmtest.OpDrop)
	return g.Finish("kernel-header", nil, attack, []byte(`{"score":1,"reason":"the kernel survived"}`))
}

// tableGrowLoopModule: table.grow by 1M null references, forever.
func tableGrowLoopModule() []byte {
	g := wasmtest.NewGuest()
	g.M.Table(0)
	attack := wasmtest.Code{}.Op(wasmtest.OpLoop, wasmtest.BlockEmpty).Op(wasmtest.OpRefNull, wasmtest.FuncRef).I32(1<<20).Fc(wasmtest.FCTableGrow, 0).Op(wasmtest.OpDrop).Br(0).Op(wasmtest.OpEnd)
	return g.Finish("table-grow", nil, attack, []byte(`{"score":1,"reason":"the loop ended"}`))
}

// tableGrowHugeModule: one table.grow of 2^31-16 null references (16 GiB
// of host memory at 8 bytes each); the guest answers with what it saw.
func tableGrowHugeModule() []byte {
	g := wasmtest.NewGuest()
	g.M.Table(0)
	attack := wasmtest.Code{}.Op(wasmtest.OpRefNull, wasmtest.FuncRef).I32(1<<31-16).Fc(wasmtest.FCTableGrow, 0).I32(-1).Op(wasmtest.OpI32Eq).Op(wasmtest.OpIf, wasmtest.BlockEmpty)
	attack = g.Output(attack, 0, fmt.Appendf(nil, `{"score":1,"reason":%q}`, answerRefused)).Op(wasmtest.OpElse)
	attack = g.Output(attack, 0, fmt.Appendf(nil, `{"score":0,"reason":%q}`, answerGrown)).Op(wasmtest.OpEnd)
	return g.Finish("table-grow-huge", nil, attack, nil)
}

// memoryGrowModule: memory.grow by one page, forever.
func memoryGrowModule() []byte {
	g := wasmtest.NewGuest()
	g.M.Memory(1)
	attack := wasmtest.Code{}.Op(wasmtest.OpLoop, wasmtest.BlockEmpty).I32(1).Op(wasmtest.OpMemoryGrow, 0).Op(wasmtest.OpDrop).Br(0).Op(wasmtest.OpEnd)
	return g.Finish("memory-grow", nil, attack, []byte(`{"score":1,"reason":"the loop ended"}`))
}

// manyTablesModule: 300 tables of 10M elements each, every one within
// the per-table limit of checkModuleShape.
func manyTablesModule(n int) func() []byte {
	return func() []byte {
		g := wasmtest.NewGuest()
		for range n {
			g.M.Table(maxTableElements)
		}
		return g.Finish("many-tables", nil, wasmtest.Code{}, []byte(`{"score":1,"reason":"measured"}`))
	}
}

// --- the parent's side ---

// shapeEvent is one step the child reports.
type shapeEvent struct {
	Event  string `json:"event"`
	MS     int64  `json:"ms,omitempty"`
	Code   string `json:"code,omitempty"`
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
	Peak   int64  `json:"peak,omitempty"` // rss: peak growth in bytes, -1 unknown
}

// shapeReport is what a child reported, and how it ended.
type shapeReport struct {
	events  []shapeEvent
	loadErr *shapeEvent // a load that failed
	ended   string      // how the child ended
	stderr  string
}

func (r *shapeReport) get(name string) *shapeEvent {
	for i := range r.events {
		if r.events[i].Event == name {
			return &r.events[i]
		}
	}
	return nil
}

func (r *shapeReport) has(name string) bool { return r.get(name) != nil }

func (r *shapeReport) last() string {
	if len(r.events) == 0 {
		return "(nothing)"
	}
	return r.events[len(r.events)-1].Event
}

// stalled says why a step is missing: the child's last step, how it
// ended, and the tail of its stderr.
func (r *shapeReport) stalled(step string) string {
	s := fmt.Sprintf("no %q step; the child's last step was %q, then it %s", step, r.last(), r.ended)
	if r.stderr != "" {
		s += "; its stderr:\n" + r.stderr
	}
	return s
}

// runShapeChild runs case name in a child process and collects its steps,
// killing it when a step is not reported within its bound.
func runShapeChild(t *testing.T, name string) *shapeReport {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(),
		shapeChildEnv+"="+name,
		"ANVIL_SHAPE_GUEST="+plugintest.GuestPath("hostile"),
		"ANVIL_SHAPE_CACHE="+plugintest.CacheDir(filepath.Dir(plugintest.GuestDir())),
		"ANVIL_SHAPE_TMP="+t.TempDir(),
		// Two Ps: one for the stuck guest, one for everything else, as on
		// the two-core CI machine, whatever this machine has.
		"GOMAXPROCS=2",
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr childStderr
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan shapeEvent)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e shapeEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event != "" {
				events <- e
			}
		}
	}()
	r := &shapeReport{}
	lastTick := time.Now()
	bound := shapeLoadBound
	timer := time.NewTimer(bound)
	defer timer.Stop()
collect:
	for {
		select {
		case e, ok := <-events:
			if !ok {
				break collect
			}
			if e.Event == "tick" {
				lastTick = time.Now() // a heartbeat, not a step: the bound runs on
				continue
			}
			r.events = append(r.events, e)
			if e.Event == "load" && e.Error != "" {
				r.loadErr = &r.events[len(r.events)-1]
			}
			if e.Event == "load" {
				bound = shapeStepBound
			}
			timer.Reset(bound)
		case <-timer.C:
			_ = cmd.Process.Kill()
			if quiet := time.Since(lastTick); quiet > shapeFrozen {
				r.ended = fmt.Sprintf("reported nothing for %s and was killed: FROZEN, its heartbeat had stopped %s before "+
					"(a stop-the-world waiting on guest code stops every goroutine)", bound, quiet.Round(time.Second))
			} else {
				r.ended = fmt.Sprintf("reported nothing for %s and was killed: alive (heartbeat), stuck in the step", bound)
			}
			for range events { // drain what it wrote before it was killed
			}
			break collect
		}
	}
	werr := cmd.Wait()
	if r.ended == "" {
		r.ended = fmt.Sprintf("exited (%v)", werr)
		if werr == nil {
			r.ended = "exited"
		}
	}
	r.stderr = stderr.String()
	t.Logf("child %s: steps %s; %s", name, r.steps(), r.ended)
	return r
}

func (r *shapeReport) steps() string {
	var s []string
	for _, e := range r.events {
		d := e.Event
		if e.MS != 0 {
			d += "@" + strconv.FormatInt(e.MS, 10) + "ms"
		}
		if e.Code != "" {
			d += "(" + e.Code + ")"
		}
		if e.Event == "rss" {
			d += fmt.Sprintf("(peak +%d MiB)", e.Peak>>20)
		}
		s = append(s, d)
	}
	return strings.Join(s, " ")
}

// childStderr keeps the first and the last 2 KiB written to it: a Go
// fatal error says why first, then dumps every goroutine.
type childStderr struct {
	mu         sync.Mutex
	head, tail []byte
	cut        bool
}

const stderrPart = 2 << 10

func (t *childStderr) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := stderrPart - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head, p = append(t.head, p[:k]...), p[k:]
	}
	t.tail = append(t.tail, p...)
	if len(t.tail) > stderrPart {
		t.tail, t.cut = t.tail[len(t.tail)-stderrPart:], true
	}
	return n, nil
}

func (t *childStderr) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	gap := ""
	if t.cut {
		gap = "\n…\n"
	}
	return string(t.head) + gap + string(t.tail)
}

// --- the child's side ---

// shapeChildEnv names the case a child process runs.
const shapeChildEnv = "ANVIL_SHAPE_CHILD"

// A child runs its case from init, before TestMain: it needs only the
// benign guest the parent built, not the guests TestMain would build.
func init() {
	if name := os.Getenv(shapeChildEnv); name != "" {
		os.Exit(shapeChild(name))
	}
}

// shapeChild runs one attack and reports each step on stdout as a JSON
// line; the parent checks them.
func shapeChild(name string) int {
	limitAddressSpace(8 << 30)
	enc := json.NewEncoder(os.Stdout)
	var encMu sync.Mutex
	emit := func(e shapeEvent) {
		encMu.Lock()
		defer encMu.Unlock()
		_ = enc.Encode(e)
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "shape child:", err)
		return 2
	}
	// The heartbeat tells the parent whether this process still runs
	// at all while a step is stuck.
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			emit(shapeEvent{Event: "tick"})
		}
	}()
	var c *shapeCase
	for i := range shapeCases {
		if shapeCases[i].name == name {
			c = &shapeCases[i]
		}
	}
	if c == nil {
		return fail(fmt.Errorf("no case %q", name))
	}
	ctx := context.Background()
	running := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(running) }) }
	rt, err := NewRuntime(ctx, RuntimeOptions{CacheDir: os.Getenv("ANVIL_SHAPE_CACHE"), Logger: slog.New(startedHandler{signal})})
	if err != nil {
		return fail(err)
	}
	benignPath := os.Getenv("ANVIL_SHAPE_GUEST")
	b, err := os.ReadFile(benignPath)
	if err != nil {
		return fail(err)
	}
	benign, err := rt.Load(ctx, benignPath, transport.DigestOf(b), transport.Options{
		Limits: transport.Limits{Timeout: duration.Duration(10 * time.Second), PoolSize: 1, MemoryPages: shapeMemPages}})
	if err != nil {
		return fail(fmt.Errorf("benign plugin: %w", err))
	}
	wasm := c.module()
	if !wasmtest.IsWasm(wasm) {
		return fail(errors.New("the assembler made no module"))
	}
	path := filepath.Join(os.Getenv("ANVIL_SHAPE_TMP"), name+".wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		return fail(err)
	}
	limits := transport.Limits{Timeout: duration.Duration(shapeDeadline), PoolSize: 1, MemoryPages: shapeMemPages}
	svc := &shapeServices{started: signal}

	// while runs the checks that must pass while the attack is running:
	// the benign plugin answers, and a garbage collection (whose
	// stop-the-world must stop the goroutine running the guest) ends.
	while := func() {
		start := time.Now()
		res, err := benign.Measure(ctx, &plugintest.FakeServices{}, plugintest.HostileRequest("b1", map[string]any{"behaviour": "echo"}))
		e := shapeEvent{Event: "benign", MS: time.Since(start).Milliseconds()}
		switch {
		case err != nil:
			e.Error = err.Error()
		case res.Error != nil || res.Reason != "b1|in-b1":
			e.Error = fmt.Sprintf("wrong answer %q (error %v)", res.Reason, res.Error)
		}
		emit(e)
		start = time.Now()
		runtime.GC()
		emit(shapeEvent{Event: "gc", MS: time.Since(start).Milliseconds()})
	}

	rss0 := residentBytes()
	start := time.Now()
	type loaded struct {
		p   transport.Plugin
		err error
	}
	loadDone := make(chan loaded, 1)
	go func() {
		p, err := rt.Load(ctx, path, transport.DigestOf(wasm), transport.Options{Limits: limits})
		loadDone <- loaded{p, err}
	}()
	var l loaded
	if c.loadFails && !c.noAttack {
		// The attack runs at load: overlap it.
		select {
		case <-running:
			emit(shapeEvent{Event: "running"})
			while()
			l = <-loadDone
		case l = <-loadDone:
		}
	} else {
		l = <-loadDone
	}
	le := shapeEvent{Event: "load", MS: time.Since(start).Milliseconds()}
	if l.err != nil {
		le.Error = l.err.Error()
		var ae *abi.Error
		if errors.As(l.err, &ae) {
			le.Code = string(ae.Code)
		}
	}
	emit(le)
	if l.err != nil || c.loadFails {
		emit(shapeEvent{Event: "done"})
		return 0
	}

	type measured struct {
		res *abi.MeasureResult
		err error
		d   time.Duration
	}
	done := make(chan measured, 1)
	rss0 = residentBytes()
	go func() {
		start := time.Now()
		res, err := l.p.Measure(ctx, svc, &abi.MeasureRequest{Kind: "shape", Metric: "shape", Case: abi.TestCase{ID: "a1", Input: "in"}})
		done <- measured{res, err, time.Since(start)}
	}()
	var m measured
	select {
	case <-running:
		emit(shapeEvent{Event: "running"})
		while()
		m = <-done
	case m = <-done:
	}
	ae := shapeEvent{Event: "attack", MS: m.d.Milliseconds()}
	if m.err != nil {
		ae.Error = m.err.Error()
		var e *abi.Error
		if errors.As(m.err, &e) {
			ae.Code = string(e.Code)
		} else {
			ae.Code = "not an abi.Error"
		}
	} else {
		ae.Reason = m.res.Reason
		if m.res.Error != nil {
			ae.Code, ae.Error = string(m.res.Error.Code), m.res.Error.Message
		}
	}
	emit(ae)
	peak := int64(-1)
	if rss0 >= 0 {
		peak = max(0, peakResidentBytes()-rss0)
	}
	emit(shapeEvent{Event: "rss", Peak: peak})
	emit(shapeEvent{Event: "done"})
	return 0
}

// shapeServices are the attack's Services: its log record says it runs.
type shapeServices struct{ started func() }

func (s *shapeServices) Judge(_ context.Context, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	return make([]abi.JudgeResponse, len(reqs))
}

func (s *shapeServices) Log(_ context.Context, _ string, rec abi.LogRecord) {
	if rec.Message == wasmtest.Started {
		s.started()
	}
}

// startedHandler is the Runtime's logger in a child: a guest's record
// logged while it describes itself says the describe attack runs.
type startedHandler struct{ started func() }

func (h startedHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h startedHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == wasmtest.Started {
		h.started()
	}
	return nil
}
func (h startedHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h startedHandler) WithGroup(string) slog.Handler      { return h }

// residentBytes is the process's resident memory (VmRSS), -1 where
// /proc/self/status does not exist.
func residentBytes() int64 { return procStatusBytes("VmRSS:") }

// peakResidentBytes is the process's peak resident memory (VmHWM).
func peakResidentBytes() int64 { return procStatusBytes("VmHWM:") }

func procStatusBytes(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			f := strings.Fields(string(rest)) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return -1
}

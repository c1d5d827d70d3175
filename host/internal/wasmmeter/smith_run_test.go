package wasmmeter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/internal/testkit"
)

// Generated-module testing of the metering rewriter, after wasmtime's
// differential fuzzing: wasm-smith makes random valid modules (only the
// features wazero enables by default, no imports, everything exported) and
// each is run as it is and as Instrument rewrites it (smith_diff_test.go).
// A module that the rewriter refuses, breaks or changes, or that makes the
// host hang, is saved to testdata/smith-crashers, which TestSmithCrashers
// replays on every run.
//
// Environment:
//
//	ANVIL_SMITH_MODULES   how many seeds (TestSmithModules: 200; the long test: 10,000)
//	ANVIL_SMITH_SEED      the first seed (TestSmithModules: 0; the long test: 1,000,000)
//	ANVIL_SMITH_DURATION  stop after this long, e.g. 30m (default: no limit but the test's -timeout)
//	ANVIL_SMITH_DEADLINE  the CPU time the original's call may take before it counts as stopped (default 250ms)
//
// scripts/fuzz-wasm runs TestSmithModules with these for longer runs.
// (smith_test.go is another test: the rewriter's own differential on a
// fixed set of generated modules in testdata/smith.)

func TestSmithModules(t *testing.T) {
	runSmith(t, 200, 0)
}

func TestSmithModulesLong(t *testing.T) {
	testkit.Long(t, "runs 10,000 generated modules")
	runSmith(t, 10_000, 1_000_000)
}

// TestSmithCrashers replays every module in testdata/smith-crashers. It
// needs no wasm-tools: the modules are kept, not their seeds.
func TestSmithCrashers(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(crasherDir, "*.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skipf("no modules in %s", crasherDir)
	}
	ctx := context.Background()
	d, err := newDiffer(ctx, smithDeadline(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.close(ctx)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".wasm")[:16], func(t *testing.T) {
			wasm, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d.onHang = func(what string) {
				fmt.Fprintf(os.Stderr, "FAIL: %s: %s\n", path, what)
				os.Exit(1)
			}
			v, err := d.check(ctx, wasm)
			if err != nil {
				note, _ := os.ReadFile(strings.TrimSuffix(path, ".wasm") + ".txt")
				t.Fatalf("%s: %v\n(saved as: %s)", path, err, strings.TrimSpace(string(note)))
			}
			t.Logf("%s: %s", path, v)
		})
	}
}

// smithStats counts a run's modules by what became of them.
type smithStats struct {
	seeds        int
	ungenerated  int // wasm-smith made no module from the seed
	rejected     int // wazero's default configuration refuses the module
	finished     int
	stopped      int
	inconclusive int // a stack overflow on either side
	findings     []string
	elapsed      time.Duration
	spent        [4]time.Duration // by verdict: where the time goes
}

func (s smithStats) String() string {
	modules := s.seeds - s.ungenerated
	return fmt.Sprintf("%d seeds, %d modules in %v (%.1f modules/s): %d finished (%v), %d stopped (%v), %d inconclusive (stack overflow; %v), %d rejected by wazero, %d seeds without a module; %d findings",
		s.seeds, modules, s.elapsed.Round(time.Millisecond), float64(modules)/s.elapsed.Seconds(),
		s.finished, s.spent[verdictFinished].Round(time.Millisecond), s.stopped, s.spent[verdictStopped].Round(time.Millisecond),
		s.inconclusive, s.spent[verdictInconclusive].Round(time.Millisecond), s.rejected, s.ungenerated, len(s.findings))
}

// maxFindings ends a run early: past a handful, the findings are one bug
// seen many times.
const maxFindings = 20

func runSmith(t *testing.T, defaultCount int, defaultSeed uint64) {
	gen, err := findSmith()
	if err != nil {
		t.Skipf("generated-module test skipped: %v", err)
	}
	count := envInt(t, "ANVIL_SMITH_MODULES", defaultCount)
	first := uint64(envInt(t, "ANVIL_SMITH_SEED", int(defaultSeed)))
	var duration time.Duration
	if v := os.Getenv("ANVIL_SMITH_DURATION"); v != "" {
		duration, err = time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ANVIL_SMITH_DURATION=%q: %v", v, err)
		}
	}
	deadline := smithDeadline(t)
	if !strings.HasSuffix(gen.version, smithVersion) {
		t.Logf("%s, not %s (scripts/ci-deps-wasm-tools): a seed here makes another module than there", gen.version, smithVersion)
	}

	ctx := context.Background()
	d, err := newDiffer(ctx, deadline)
	if err != nil {
		t.Fatal(err)
	}
	before := readUsage()

	var stats smithStats
	start := time.Now()
	stopAt := time.Time{}
	if duration > 0 {
		stopAt = start.Add(duration)
	}
	if td, ok := t.Deadline(); ok {
		// Leave room for a module whose every side is stopped, and the
		// leak check.
		if limit := td.Add(-(3*deadline + d.engineGrace + hangGrace + 30*time.Second)); stopAt.IsZero() || limit.Before(stopAt) {
			stopAt = limit
		}
	}
	// wasm-smith makes the next modules while this goroutine checks one.
	genCtx, stopGen := context.WithCancel(ctx)
	modules := make(chan generated, 4)
	go func() {
		defer close(modules)
		for i := range count {
			seed := first + uint64(i)
			wasm, flags, err := gen.generate(genCtx, seed)
			select {
			case modules <- generated{seed, wasm, flags, err}:
			case <-genCtx.Done():
				return
			}
		}
	}()
	defer func() {
		stopGen()
		for range modules {
		}
	}()

	for m := range modules {
		if !stopAt.IsZero() && time.Now().After(stopAt) {
			t.Logf("stopping after %d of %d seeds: the time is up", stats.seeds, count)
			break
		}
		seed, wasm, flags := m.seed, m.wasm, m.flags
		stats.seeds++
		if errors.Is(m.err, errNoModule) {
			stats.ungenerated++
			continue
		}
		if m.err != nil {
			t.Fatal(m.err)
		}
		note := func(finding string) string {
			return fmt.Sprintf("seed: %d\ngenerator: %s smith %s (input: seedInput(%d), smith_gen_test.go)\nfinding: %s\n",
				seed, gen.version, strings.Join(flags, " "), seed, finding)
		}
		var clearInFlight func()
		d.onHang = func(what string) {
			path, err := saveCrasher(wasm, note(what))
			clearInFlight()
			fmt.Fprintf(os.Stderr, "FAIL: seed %d: %s; saved as %s (%v)\n", seed, what, path, err)
			os.Exit(1)
		}
		clearInFlight, err = saveInFlight(wasm, note("the test process ended while it ran this module (a crash, or a hang no bound could end)"))
		if err != nil {
			t.Fatal(err)
		}
		checkStart := time.Now()
		v, err := d.check(ctx, wasm)
		stats.spent[v] += time.Since(checkStart)
		clearInFlight()
		if err != nil {
			path, saveErr := saveCrasher(wasm, note(err.Error()))
			if saveErr != nil {
				t.Error(saveErr)
			}
			stats.findings = append(stats.findings, fmt.Sprintf("seed %d (%s): %v", seed, path, err))
			t.Errorf("seed %d: %v\nsaved as %s", seed, err, path)
			if len(stats.findings) >= maxFindings {
				t.Logf("stopping after %d findings", len(stats.findings))
				break
			}
			continue
		}
		switch v {
		case verdictRejected:
			stats.rejected++
		case verdictFinished:
			stats.finished++
		case verdictStopped:
			stats.stopped++
		case verdictInconclusive:
			stats.inconclusive++
		}
	}
	stats.elapsed = time.Since(start)
	stopGen()
	for range modules {
	}
	d.close(ctx)
	t.Logf("smith: %s (first seed %d, deadline %v, %s)", stats, first, deadline, gen.version)
	after, err := checkNoLeaks(before)
	if err != nil {
		t.Error(err)
	}
	t.Logf("smith: host before: %s; after: %s", before, after)
}

// generated is a seed's module, or why it has none.
type generated struct {
	seed  uint64
	wasm  []byte
	flags []string
	err   error
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}

// smithDeadline is the CPU time the original's call may take before it
// counts as stopped. Most generated calls take microseconds; one that runs
// 250 ms is almost always a loop that never ends, and each such module
// costs three of these (the original's, and twice that for the
// instrumented module).
func smithDeadline(t *testing.T) time.Duration {
	v := os.Getenv("ANVIL_SMITH_DEADLINE")
	if v == "" {
		return 250 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("ANVIL_SMITH_DEADLINE=%q: want a duration", v)
	}
	return d
}

// Command profilehost runs what `anvil-host run` runs — engine.New, Run
// with a report.Builder taking the cases, and the Builder's Write, with the
// same options — under the Go profilers, for finding
// where the host's time goes in a load run (bench/run.sh with PROFILE=1).
//
//	profilehost -c anvil.yaml -input cases.jsonl -o out -concurrency 8 -cache off \
//	    -cpuprofile cpu.pprof -mutexprofile mutex.pprof -blockprofile block.pprof -trace trace.out
//
// Then: go tool pprof -top cpu.pprof; go tool trace trace.out.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/report"
)

func main() {
	cfgPath := flag.String("c", "anvil.yaml", "config file")
	input := flag.String("input", "", "dataset")
	outDir := flag.String("o", "anvil-results", "output directory")
	conc := flag.Int("concurrency", 8, "cases in flight")
	cache := flag.String("cache", "off", "judge cache: off, rw, replay")
	storePath := flag.String("store", "", "SQLite store path")
	cpuProf := flag.String("cpuprofile", "", "write a CPU profile here")
	memProf := flag.String("memprofile", "", "write an allocation profile here (at the end)")
	mutexProf := flag.String("mutexprofile", "", "write a mutex-contention profile here")
	blockProf := flag.String("blockprofile", "", "write a blocking profile here")
	traceOut := flag.String("trace", "", "write an execution trace here")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *cfgPath, *input, *outDir, *conc, *cache, *storePath, *cpuProf, *memProf, *mutexProf, *blockProf, *traceOut); err != nil {
		fmt.Fprintln(os.Stderr, "profilehost:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfgPath, input, outDir string, conc int, cache, storePath, cpuProf, memProf, mutexProf, blockProf, traceOut string) error {
	if mutexProf != "" {
		runtime.SetMutexProfileFraction(5)
	}
	if blockProf != "" {
		runtime.SetBlockProfileRate(int(1e5)) // one sample per 100µs blocked
	}
	if cpuProf != "" {
		f, err := os.Create(cpuProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if traceOut != "" {
		f, err := os.Create(traceOut)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}

	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := engine.New(ctx, cfg, engine.Options{Logger: logger, Cache: cache, StorePath: storePath, CompileCacheDir: compileCacheDir()})
	if err != nil {
		return err
	}
	defer eng.Close(context.WithoutCancel(ctx)) //nolint:errcheck
	t0 := time.Now()
	reports := report.NewBuilder(outDir)
	defer reports.Close()
	s, err := eng.Run(ctx, engine.RunOptions{Input: input, OutputDir: outDir, Concurrency: conc, Sink: reports})
	if err != nil {
		return err
	}
	t1 := time.Now()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := reports.Write(s, ""); err != nil {
		return err
	}
	t2 := time.Now()
	runtime.ReadMemStats(&after)
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(os.Stderr, "profilehost: engine.Run %.3fs (then Go memory from the OS %.1f MiB), reports written %.3fs (then %.1f MiB); total alloc %.1f MiB, %d GCs\n",
		t1.Sub(t0).Seconds(), mib(before.Sys), t2.Sub(t1).Seconds(), mib(after.Sys), mib(after.TotalAlloc), after.NumGC)
	if err := report.Table(os.Stdout, s); err != nil {
		return err
	}

	write := func(path, name string) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.Lookup(name).WriteTo(f, 0)
	}
	if err := write(memProf, "allocs"); err != nil {
		return err
	}
	if err := write(mutexProf, "mutex"); err != nil {
		return err
	}
	return write(blockProf, "block")
}

// compileCacheDir is where `anvil-host run` keeps wazero's compiled
// modules (ANVIL_COMPILE_CACHE, else the user cache dir), so a profile
// shows a run as a user's second run has it, not a compile.
func compileCacheDir() string {
	if d := os.Getenv("ANVIL_COMPILE_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "anvil", "wazero")
	}
	return ""
}

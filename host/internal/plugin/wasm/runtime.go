package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
)

// RuntimeOptions configure a Runtime.
type RuntimeOptions struct {
	// CacheDir keeps compiled machine code on disk across processes, keyed
	// by the module's sha256 (and the wazero version and CPU). Compiling a
	// Go guest takes 1.5–2 s cold and ~50–65 ms from this cache. Empty
	// keeps compiled code in memory only.
	CacheDir string
	// Logger receives host-side events and guest logs that arrive outside an
	// invocation (during warm-up). Nil discards them.
	Logger *slog.Logger
	// BeforeCompile, when set, is called before each module is compiled to
	// machine code (not before the interpreter reads a descriptor); an
	// error fails that load. It is a seam for tests that must hold a
	// compile back until they have seen something happen meanwhile; it
	// must return when ctx ends.
	BeforeCompile func(ctx context.Context, digest string) error
}

// Runtime compiles and runs Wasm plugins. Create one per process and share
// it: every plugin loaded through it shares one compilation cache, so a
// module is compiled once per digest however many times it is loaded.
// A Runtime is safe for concurrent use.
type Runtime struct {
	logger        *slog.Logger
	beforeCompile func(ctx context.Context, digest string) error
	cache         wazero.CompilationCache
	// base is the wazero configuration every plugin runtime derives from.
	// It leaves close-on-context-done off: metering (meter.go) stops a
	// guest of any shape, and wazero's own check would leave compiled
	// code at every loop header.
	base wazero.RuntimeConfig

	// descriptors remembers each compiled module's descriptor next to its
	// machine code (deferred.go).
	descriptors descriptorMemo

	mu      sync.Mutex
	flights map[string]chan struct{} // digest -> closed when its first compile is done
	closed  bool
	// leaders counts compiles that were not waiting on another load of the
	// same digest (a test reads it).
	leaders atomic.Int64
	// onWait, when set (tests only, before any load), is called each time
	// a load starts waiting for another load's compile of the same digest:
	// a test holds the first compile until every other load waits, so
	// which load leads does not depend on timing.
	onWait func(digest string)
	// compiles are the goroutines compiling (or freeing an abandoned
	// compile's result); compiling counts the compiles alone (a test reads it).
	compiles  sync.WaitGroup
	compiling atomic.Int64
}

// NewRuntime creates a Runtime. Close it when done.
func NewRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("plugin runtime: compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	return &Runtime{
		logger:        logger,
		beforeCompile: opts.BeforeCompile,
		descriptors:   descriptorMemo{dir: opts.CacheDir},
		cache:         cache,
		base:          wazero.NewRuntimeConfig().WithCompilationCache(cache),
		flights:       map[string]chan struct{}{},
	}, nil
}

// Close waits for compiles that were abandoned (their load's context
// ended) to stop, and releases the compilation cache. Plugins loaded
// through the Runtime must be closed first.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.compiles.Wait() // an abandoned compile stops before its next function
	return r.cache.Close(ctx)
}

// compileOnce runs compile, which compiles the module of digest through
// the shared cache. Concurrent loads of one digest wait for the first to
// finish, and then find its machine code in the cache (in memory while that
// plugin is open, on disk with a CacheDir): wazero itself would let them
// all compile the same module at once.
func (r *Runtime) compileOnce(ctx context.Context, digest string, compile func() error) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("plugin runtime is closed")
	}
	done, busy := r.flights[digest]
	if !busy {
		done = make(chan struct{})
		r.flights[digest] = done
	}
	r.mu.Unlock()

	if busy {
		if r.onWait != nil {
			r.onWait(digest)
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		return compile()
	}
	defer func() {
		r.mu.Lock()
		delete(r.flights, digest)
		r.mu.Unlock()
		close(done)
	}()
	r.leaders.Add(1)
	start := time.Now()
	err := compile()
	r.logger.Debug("compiled plugin module", "digest", digest, "took", time.Since(start), "error", err)
	return err
}

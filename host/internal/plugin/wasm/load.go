package wasm

import (
	"context"
	"fmt"
	"runtime"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// Load verifies, compiles and starts the Wasm plugin at path. digest is the
// module's pinned sha256 ("sha256:<hex>" or bare hex); it is checked before
// anything is compiled, and an empty digest is refused — a sandbox does not
// make unknown code trustworthy, it only limits what it can do.
//
// Load refuses a module that speaks another ABI major, lacks the marker or
// an export its kinds need, or describes itself inconsistently. The
// returned Plugin keeps up to opts.Limits.PoolSize warm instances.
func (r *Runtime) Load(ctx context.Context, path, digest string, opts transport.Options) (transport.Plugin, error) {
	if digest == "" {
		return nil, fmt.Errorf("plugin %s: no sha256 digest pinned; refusing to load unverified code "+
			"(`anvil-host plugin inspect %s` prints the digest)", path, path)
	}
	want, err := transport.ParseDigest(digest)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	return r.load(ctx, path, want, opts)
}

// Inspect loads the plugin at path without a pinned digest, only to read
// its Info (descriptor and digest), and closes it again. It exists for
// `anvil-host plugin inspect`, which is how an operator learns the digest
// to pin; nothing else should load unverified code.
func (r *Runtime) Inspect(ctx context.Context, path string) (transport.Info, error) {
	p, err := r.load(ctx, path, "", transport.Options{Limits: transport.Limits{PoolSize: 1}})
	if err != nil {
		return transport.Info{}, err
	}
	info := p.Info()
	return info, p.Close(ctx)
}

func (r *Runtime) load(ctx context.Context, path, want string, opts transport.Options) (transport.Plugin, error) {
	v, err := r.verify(path, want, opts)
	if err != nil {
		return nil, err
	}
	w, raw, err := r.start(ctx, v)
	if err != nil {
		return nil, err
	}
	r.descriptors.remember(w.info.Digest, raw, r.logger)
	return w, nil
}

// verified is a module that passed every check made before compiling:
// size, digest, ABI marker, section shape and imports.
type verified struct {
	wasm    []byte
	exports map[string]bool
	// info names the module by path and digest until its descriptor is read.
	info transport.Info
	opts transport.Options
}

// verify reads the module at path and makes every check that needs no
// compiling. want, when not empty, is the digest it must have.
func (r *Runtime) verify(path, want string, opts transport.Options) (*verified, error) {
	opts.Limits = opts.Limits.WithDefaults()
	if opts.Limits.MemoryPages > 65536 {
		return nil, fmt.Errorf("plugin %s: memory_pages %d is above the Wasm maximum 65536", path, opts.Limits.MemoryPages)
	}
	wasm, err := readModule(path, opts.Limits.MaxModuleBytes)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	got := transport.DigestOf(wasm)
	if want != "" && got != want {
		return nil, fmt.Errorf("plugin %s: %w: want %s, got %s; refusing to compile", path, transport.ErrDigestMismatch, want, got)
	}
	v := &verified{wasm: wasm, opts: opts,
		info: transport.Info{Descriptor: abi.Descriptor{Name: path}, Digest: got, Transport: transport.TransportWasm, Path: path}}
	if v.exports, err = moduleExports(wasm); err != nil {
		return nil, transport.LoadError(v.info, abi.CodeABI, "%v", err)
	}
	if err := checkMarker(v.exports); err != nil {
		return nil, transport.LoadError(v.info, abi.CodeABI, "%v", err)
	}
	if err := checkModuleShape(wasm); err != nil {
		return nil, transport.LoadError(v.info, abi.CodeABI, "module refused before compiling: %v", err)
	}
	if err := checkImports(wasm); err != nil {
		return nil, transport.LoadError(v.info, abi.CodeABI, "module refused before compiling: %v", err)
	}
	if v.wasm, err = instrument(wasm, opts.Limits); err != nil {
		return nil, transport.LoadError(v.info, abi.CodeABI, "module refused before compiling: %v", err)
	}
	return v, nil
}

// start compiles a verified module, starts its first instance and reads
// its descriptor. It returns the plugin and the descriptor's JSON as the
// guest wrote it.
func (r *Runtime) start(ctx context.Context, v *verified) (*wasmPlugin, []byte, error) {
	w := &wasmPlugin{info: v.info, opts: v.opts, logger: r.logger}
	opts := v.opts
	err := r.compileOnce(ctx, v.info.Digest, func() error {
		if r.beforeCompile != nil {
			if err := r.beforeCompile(ctx, v.info.Digest); err != nil {
				return err
			}
		}
		c, err := r.compile(ctx, r.base, w, v.wasm)
		w.compiled = c
		return err
	})
	// The module's bytes are garbage once compiled; letting go of them
	// here, not when the load returns, keeps them out of the heap the
	// first instance and its descriptor are made in (4.7 MB for a Go
	// guest, twice that in the heap's goal).
	v.wasm = nil
	if err != nil {
		return nil, nil, transport.LoadError(w.info, abi.CodeABI, "compile: %v", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = w.compiled.Close(context.WithoutCancel(ctx))
		}
	}()

	first, err := w.newInstance(ctx)
	if err != nil {
		return nil, nil, transport.LoadError(w.info, abi.CodeABI, "%v", err)
	}
	raw, d, err := w.describe(ctx, first, v.exports)
	if err != nil {
		first.close(ctx)
		return nil, nil, err
	}
	w.info.Descriptor = d
	w.directIO = usesDirectIO(v.exports, d) && !opts.Test.WasmExtismIO()
	if w.directIO {
		if err := w.openIO(ctx, first); err != nil {
			first.close(ctx)
			return nil, nil, describeError(w.info, errIOSetup(err))
		}
	}
	for _, c := range d.Capabilities {
		if !opts.Grants.Has(c) {
			r.logger.Info("plugin asks for a capability that is not granted; its calls will be denied",
				"plugin", w.info.ID(), "digest", w.info.Digest, "capability", c)
		}
	}

	w.pool = newPool(poolSize(opts), func(ctx context.Context) (*instance, error) {
		in, err := w.newInstance(ctx)
		if err != nil {
			if ctx.Err() != nil {
				// The deadline passed while the instance was starting: a
				// timeout, not a fault of the module.
				return nil, abi.Errorf(abi.CodeTimeout, "the deadline passed while an instance was starting: %v", err)
			}
			return nil, abi.Errorf(abi.CodeTrap, "%v", err)
		}
		_, err = w.warm(ctx, in)
		if err == nil && w.directIO {
			if err = w.openIO(ctx, in); err != nil {
				err = errIOSetup(err)
			}
		}
		if err != nil {
			in.close(context.WithoutCancel(ctx))
			if ctx.Err() != nil {
				return nil, abi.Errorf(abi.CodeTimeout, "the deadline passed while an instance was warming up: %v", err)
			}
			return nil, err
		}
		return in, nil
	})
	w.pool.add(first)
	ok = true
	return w, raw, nil
}

// poolSize is how many instances a Wasm plugin may have. Without the
// judge granted a guest cannot wait on anything (anvil_log does not
// block), so its calls are pure CPU: an instance beyond GOMAXPROCS adds
// its resident memory (≈ 12 MiB for a Go guest) and no throughput, and
// the pool stops there. With the judge granted an instance waits for the
// judge's replies, and pool_size instances keep that many batches in
// flight.
func poolSize(opts transport.Options) int {
	if opts.Grants.Judge {
		return opts.Limits.PoolSize
	}
	return max(1, min(opts.Limits.PoolSize, runtime.GOMAXPROCS(0)))
}

// describe warms a fresh instance, which runs anvil_describe, and checks
// the descriptor against the ABI and the module's exports. It returns the
// descriptor's JSON as the guest wrote it, and the descriptor.
func (w *wasmPlugin) describe(ctx context.Context, in *instance, exports map[string]bool) ([]byte, abi.Descriptor, error) {
	raw, err := w.warm(ctx, in)
	if err != nil {
		return nil, abi.Descriptor{}, describeError(w.info, err)
	}
	d, err := parseDescriptor(w.info, raw, exports)
	return raw, d, err
}

// parseDescriptor decodes anvil_describe's result strictly and checks it.
func parseDescriptor(info transport.Info, raw []byte, exports map[string]bool) (abi.Descriptor, error) {
	var d abi.Descriptor
	if err := transport.DecodeStrict(raw, &d); err != nil {
		return abi.Descriptor{}, transport.LoadError(info, abi.CodeABI, "%s result: %v", abi.ExportDescribe, err)
	}
	if err := transport.CheckDescriptor(&d, exports); err != nil {
		return abi.Descriptor{}, transport.LoadError(info, abi.CodeABI, "descriptor: %v", err)
	}
	return d, nil
}

// compile compiles the module under opts.Limits.CompileTimeout. wazero
// checks its context only between functions, and only when it compiles on
// several workers, so both are arranged; checkModuleShape has bounded what
// one function can cost. When the deadline passes the load fails at once,
// and the compilation, abandoned, stops before its next function and frees
// what it made.
func (r *Runtime) compile(ctx context.Context, base wazero.RuntimeConfig, w *wasmPlugin, wasm []byte) (*extism.CompiledPlugin, error) {
	limit := w.opts.Limits.CompileTimeout.Std()
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cctx = experimental.WithCompilationWorkers(cctx, max(2, runtime.GOMAXPROCS(0)))
	cctx = experimental.WithFunctionListenerFactory(cctx, bounds{maxBytes: w.opts.Limits.MaxOutputBytes})
	type compiled struct {
		p   *extism.CompiledPlugin
		err error
	}
	done := make(chan compiled, 1)
	// The compile goroutine, and the one that frees what an abandoned
	// compile made, belong to the Runtime until they end: its Close waits
	// for them, since wazero's compiler uses the compilation cache to the
	// last function (closing the cache under it crashes the process).
	r.compiles.Add(1)
	r.compiling.Add(1)
	go func() {
		defer r.compiles.Done()
		defer r.compiling.Add(-1)
		p, err := extism.NewCompiledPlugin(cctx, manifest(wasm, w.opts.Limits), extism.PluginConfig{
			RuntimeConfig: base.WithMemoryLimitPages(w.opts.Limits.MemoryPages),
			EnableWasi:    true, // Go and most other guests import WASI; what it can reach is decided per instance
		}, w.hostFunctions())
		done <- compiled{p, err}
	}()
	select {
	case c := <-done:
		if c.err != nil && cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, fmt.Errorf("not finished within compile_timeout %s; the module is refused", limit)
		}
		return c.p, c.err
	case <-cctx.Done():
		r.compiles.Add(1)
		go func() {
			defer r.compiles.Done()
			if c := <-done; c.p != nil {
				_ = c.p.Close(context.WithoutCancel(ctx))
			}
		}()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("not finished within compile_timeout %s; the module is refused", limit)
	}
}

// manifest is the Extism manifest of a sandboxed plugin: no hosts, no
// paths, no config, no variable store; the memory cap is also set on the
// runtime config, which is what wazero enforces.
func manifest(wasm []byte, l transport.Limits) extism.Manifest {
	return extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		Memory: &extism.ManifestMemory{
			MaxPages:             l.MemoryPages,
			MaxHttpResponseBytes: 0,
			MaxVarBytes:          0,
		},
	}
}

// checkMarker requires the ABI v1 marker and anvil_describe, and says
// which major a module speaks when it is not ours.
func checkMarker(exports map[string]bool) error {
	if !exports[abi.ExportMarker] {
		if majors := markerMajors(exports); len(majors) > 0 {
			return fmt.Errorf("module speaks Anvil ABI v%d (exports %s%d); this host speaks ABI v%d (%s)",
				majors[0], abi.MarkerPrefix, majors[0], abi.Major, abi.ExportMarker)
		}
		return fmt.Errorf("module has no ABI marker export (%s): not an Anvil plugin", abi.ExportMarker)
	}
	if !exports[abi.ExportDescribe] {
		return fmt.Errorf("module lacks the required export %s", abi.ExportDescribe)
	}
	return nil
}

func describeError(info transport.Info, err error) error {
	if ae, ok := err.(*abi.Error); ok {
		ae.Message = "describe: " + ae.Message
		ae.Plugin, ae.Digest = info.Path, info.Digest
		return ae
	}
	return fmt.Errorf("plugin %s@%s: describe: %w", info.Path, info.Digest, err)
}

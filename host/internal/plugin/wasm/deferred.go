package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// Deferred is a Wasm plugin whose descriptor is known and whose compiled
// code may still be on its way: LoadDeferred returns it once the module
// has passed every check made before compiling (digest, marker, shape,
// imports) and its descriptor has been read and checked, so a host can
// check metric params against the kinds' schemas and start work that
// needs no plugin while a cold compile (1.5–2 s for a Go guest) runs.
//
// A call (Prepare, Measure, Node) waits until the plugin is compiled and
// started, or its context ends. The compiled module's own descriptor must
// be byte for byte the one read early; a module that fails to compile, to
// start, or describes itself differently is refused, and every call gets
// that error (an *abi.Error naming the module by path and digest).
type Deferred struct {
	info   transport.Info
	cancel context.CancelFunc

	done chan struct{} // closed when p or err is set
	p    *wasmPlugin
	err  error

	closeOnce sync.Once
	closeErr  error
}

var _ transport.Plugin = (*Deferred)(nil)

// LoadDeferred verifies the Wasm plugin at path against its pinned digest
// like Load, reads its descriptor without waiting for its machine code, and
// compiles and starts it in the background.
//
// The descriptor is the one this Runtime's CacheDir remembers for the
// digest (written after an earlier compiled load of the same bytes: a warm
// start waits for nothing), else the module's anvil_describe run once in
// wazero's interpreter, which needs no machine code (≈ 0.3 s for a Go
// guest where compiling takes seconds); the compile starts after it. When
// the interpreter fails, the compiled module decides and is waited for.
// onFail, when set, is called with the error before any call can see it,
// when the background load fails.
func (r *Runtime) LoadDeferred(ctx context.Context, path, digest string, opts transport.Options, onFail func(error)) (*Deferred, error) {
	if digest == "" {
		return nil, fmt.Errorf("plugin %s: no sha256 digest pinned; refusing to load unverified code "+
			"(`anvil-host plugin inspect %s` prints the digest)", path, path)
	}
	want, err := transport.ParseDigest(digest)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	v, err := r.verify(path, want, opts)
	if err != nil {
		return nil, err
	}
	// The compile outlives the caller's context (the load returns before
	// it ends); Close stops it.
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := &Deferred{info: v.info, cancel: cancel, done: make(chan struct{})}
	type started struct {
		p   *wasmPlugin
		raw []byte
		err error
	}
	compiled := make(chan started, 1)
	compile := func() {
		go func() {
			p, raw, err := r.start(bg, v)
			compiled <- started{p, raw, err}
		}()
	}
	// settle records the compiled load's outcome; early is the descriptor
	// the plugin was announced with, if it was (nil: none yet).
	// notify, when set, hears a refusal before any call can see it.
	settle := func(s started, early []byte, from string, notify func(error)) {
		switch {
		case s.err != nil:
			d.err = s.err
		case early != nil && !bytes.Equal(s.raw, early):
			_ = s.p.Close(context.WithoutCancel(ctx))
			r.descriptors.forget(v.info.Digest)
			d.err = transport.LoadError(v.info, abi.CodeABI, "the compiled module describes itself differently from the descriptor %s; refused", from)
		default:
			d.p = s.p
			r.descriptors.remember(v.info.Digest, s.raw, r.logger)
		}
		if d.err != nil && notify != nil {
			notify(d.err)
		}
		close(d.done)
	}
	// now settles on the compiled load, waited for, before returning.
	now := func() (*Deferred, error) {
		settle(<-compiled, nil, "", nil)
		if d.err != nil {
			return nil, d.err
		}
		d.info = d.p.info
		return d, nil
	}
	// abandon stops the compile and frees what it made.
	abandon := func(err error) (*Deferred, error) {
		cancel()
		if s := <-compiled; s.p != nil {
			_ = s.p.Close(context.WithoutCancel(ctx))
		}
		close(d.done)
		return nil, err
	}

	var early []byte
	from := "remembered in the compile cache"
	if raw, ok := r.descriptors.recall(v.info.Digest, v.opts.Limits.MaxOutputBytes); ok {
		if _, err := parseDescriptor(v.info, raw, v.exports); err == nil {
			early = raw
		}
	}
	if early == nil {
		// Not remembered: most likely never compiled here either, so the
		// interpreter goes first, alone (on two cores a compile beside it
		// would take half its CPU), and the compile starts after it.
		from = "read before compiling, in the interpreter"
		raw, err := r.describeInterpreted(ctx, v)
		if ctx.Err() != nil {
			cancel()
			return nil, fmt.Errorf("plugin %s: %w", path, ctx.Err())
		}
		compile()
		if err != nil {
			// The compiled module decides, and is waited for.
			r.logger.Debug("describe in the interpreter failed", "plugin", v.info.Path, "digest", v.info.Digest, "err", err)
			return now()
		}
		early = raw
	} else {
		compile()
	}
	desc, err := parseDescriptor(v.info, early, v.exports)
	if err != nil {
		return abandon(err)
	}
	d.info.Descriptor = desc
	go func() { settle(<-compiled, early, from, onFail) }()
	return d, nil
}

// describeInterpreted runs the module's anvil_describe in wazero's
// interpreter, in the same sandbox and under the same limits as a compiled
// instance, and returns the checked descriptor's JSON.
func (r *Runtime) describeInterpreted(ctx context.Context, v *verified) ([]byte, error) {
	w := &wasmPlugin{info: v.info, opts: v.opts, logger: r.logger}
	c, err := r.compile(ctx, wazero.NewRuntimeConfigInterpreter(), w, v.wasm)
	if err != nil {
		return nil, err
	}
	w.compiled = c
	defer c.Close(context.WithoutCancel(ctx))
	in, err := w.newInstance(ctx)
	if err != nil {
		return nil, err
	}
	defer in.close(context.WithoutCancel(ctx))
	raw, _, err := w.describe(ctx, in, v.exports)
	return raw, err
}

// Info is the plugin's identity and descriptor, known from the start.
func (d *Deferred) Info() transport.Info { return d.info }

// Done is closed once the plugin is compiled and started, or refused.
func (d *Deferred) Done() <-chan struct{} { return d.done }

// Err is why the plugin was refused, once Done is closed; nil before.
func (d *Deferred) Err() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// Ready waits until the plugin is compiled and started and returns why it
// was refused, or ctx's error.
func (d *Deferred) Ready(ctx context.Context) error {
	select {
	case <-d.done:
		return d.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Deferred) Prepare(ctx context.Context, svc transport.Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	if err := d.Ready(ctx); err != nil {
		return nil, err
	}
	return d.p.Prepare(ctx, svc, req)
}

func (d *Deferred) Measure(ctx context.Context, svc transport.Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	if err := d.Ready(ctx); err != nil {
		return nil, err
	}
	return d.p.Measure(ctx, svc, req)
}

func (d *Deferred) Node(ctx context.Context, svc transport.Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	if err := d.Ready(ctx); err != nil {
		return nil, err
	}
	return d.p.Node(ctx, svc, req)
}

// Close stops a compile still running, waits for it to stop, and closes
// the plugin.
func (d *Deferred) Close(ctx context.Context) error {
	d.closeOnce.Do(func() {
		d.cancel()
		<-d.done
		if d.p != nil {
			d.closeErr = d.p.Close(ctx)
		}
	})
	return d.closeErr
}

// descriptorMemo keeps each compiled module's descriptor JSON beside the
// compile cache, keyed by the module's digest, so a later load of the same
// bytes knows its kinds and schemas before its machine code is loaded. It
// is as trusted as the machine code in the same directory, and checked
// against the compiled module's own descriptor on every load all the same.
type descriptorMemo struct{ dir string }

func (m descriptorMemo) path(digest string) string {
	if m.dir == "" {
		return ""
	}
	return filepath.Join(m.dir, "anvil-descriptors", strings.TrimPrefix(digest, "sha256:")+".json")
}

// recall returns the remembered descriptor of digest, at most max bytes.
func (m descriptorMemo) recall(digest string, max int) ([]byte, bool) {
	p := m.path(digest)
	if p == "" {
		return nil, false
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil || len(b) > max {
		return nil, false
	}
	return b, true
}

// remember writes the descriptor of digest (atomically: a reader sees the
// old file or the new one). A failure only costs a later start-up time.
func (m descriptorMemo) remember(digest string, raw []byte, logger *slog.Logger) {
	p := m.path(digest)
	if p == "" {
		return
	}
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, raw) {
		return
	}
	err := os.MkdirAll(filepath.Dir(p), 0o755)
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(filepath.Dir(p), ".desc-*"); err == nil {
			_, err = f.Write(raw)
			err = errors.Join(err, f.Close())
			if err == nil {
				err = os.Rename(f.Name(), p)
			}
			if err != nil {
				_ = os.Remove(f.Name())
			}
		}
	}
	if err != nil {
		logger.Debug("could not remember a plugin descriptor", "digest", digest, "err", err)
	}
}

// forget drops the remembered descriptor of digest.
func (m descriptorMemo) forget(digest string) {
	if p := m.path(digest); p != "" {
		_ = os.Remove(p)
	}
}

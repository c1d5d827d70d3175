package wasm

import (
	"context"
	"errors"
	"fmt"
	"math"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// instance is one instantiated guest. It is used by one call at a time: a
// Wasm instance is not safe for concurrent calls, and after any failed call
// it is thrown away, because a guest that trapped or was stopped half-way
// is in an unknown state (a Go guest keeps running corrupted).
type instance struct {
	p      *extism.Plugin
	stderr *transport.StderrBuffer
	// io is the address of the guest's direct-I/O control block
	// (directio.go), 0 while calls go through Extism's input and output.
	io uint32
	// guest is the module that runs the guest's code, known once
	// anvil_describe has run (bindInstance); kernel is its Extism kernel.
	guest  api.Module
	kernel kernel
	// exports are the guest's exports the host called directly.
	exports map[string]api.Function
}

// errStale says the instance's module was already closed before the call
// ran (the guest exited cleanly in an earlier call); the call did not
// happen and may be retried on a fresh instance.
var errStale = errors.New("instance already exited")

// newInstance instantiates the module in the sandbox: no filesystem
// mounts, no environment, no arguments, empty stdin, stdout discarded,
// stderr kept (bounded), and wazero's fake clocks and deterministic random
// source — nothing is added to the zero ModuleConfig but stderr, and that
// is the point.
func (w *wasmPlugin) newInstance(ctx context.Context) (*instance, error) {
	tail := transport.NewStderrBuffer(transport.StderrKeep)
	cfg := wazero.NewModuleConfig().WithStderr(tail)
	// A module's start function runs now, metered like any call: without
	// a deadline of its own, one that never ends would hold this forever.
	ctx, cancel := context.WithTimeout(ctx, max(w.opts.Limits.Timeout.Std(), transport.MinWarmup))
	defer cancel()
	// The start function's metering calls yield, a go-sdk host function,
	// and go-sdk refuses to run one without a plugin in the context; the
	// meter reads none, and no plugin exists yet.
	ctx = context.WithValue(ctx, extism.PluginCtxKey("plugin"), (*extism.Plugin)(nil))
	p, err := w.compiled.Instance(experimental.WithMemoryAllocator(ctx, memoryAllocator()),
		extism.PluginInstanceConfig{ModuleConfig: cfg})
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	w.instances.Add(1)
	return &instance{p: p, stderr: tail}, nil
}

// warm runs the guest's runtime initialisation (a Go guest's _initialize
// and package inits) and anvil_describe once, so that cost is paid before
// the instance serves a case, outside that case's deadline. It returns the
// descriptor JSON. The call has a guard without Services: a judge call is
// refused, and log records go to the runtime logger within the same
// bounds as an invocation's.
func (w *wasmPlugin) warm(ctx context.Context, in *instance) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, max(w.opts.Limits.Timeout.Std(), transport.MinWarmup))
	defer cancel()
	g := transport.NewGuard(nil, w.info, w.opts, w.logger)
	defer g.Finish(ctx)
	out, _, err := in.call(withGuard(ctx, g), abi.ExportDescribe, nil, w.opts.Limits.MaxOutputBytes, 0)
	return out, err
}

// call runs one export. maxFuel bounds the guest's work (0: only the
// context's deadline does). The error is an *abi.Error without plugin
// name (the caller names it) for a guest fault, errStale, or the caller's
// context error when the caller gave up; in every error case the instance
// must be discarded. fuel is what the guest spent, whatever the outcome.
func (in *instance) call(ctx context.Context, fn string, input []byte, maxOut int, maxFuel uint64) (out []byte, fuel uint64, err error) {
	in.stderr.Reset()
	st := &callState{maxBytes: maxOut, inst: in, meter: meter{max: maxFuel}}
	ctx = withCallState(ctx, st)
	direct := in.io != 0 && fn != abi.ExportDescribe
	if direct {
		if in.guest.IsClosed() {
			return nil, 0, errStale // its memory may be gone: do not touch it
		}
		if err := in.putInput(ctx, input); err != nil {
			return nil, 0, err
		}
	}
	var rc uint32
	if direct {
		rc, out, err = in.callDirect(ctx, fn)
	} else {
		// Extism resets the kernel before the call: no block the guest
		// held survives it.
		in.kernel.blocks.clear()
		in.kernel.dirty, in.kernel.answered = false, false
		rc, out, err = in.p.CallWithContext(ctx, fn, input)
	}
	fuel = st.meter.used
	if st.refused != nil {
		// A bound stopped the guest or Extism before it copied a block
		// (bounds.go, kernel.go, meter.go).
		e := *st.refused
		e.Message = fn + ": " + e.Message
		e.Stderr = in.stderr.String()
		return nil, fuel, &e
	}
	if err != nil {
		return nil, fuel, in.classify(ctx, fn, rc, err)
	}
	if ctx.Err() != nil {
		// The context ended while the guest ran, and it returned before
		// its next return to the host could stop it: its answer is late.
		return nil, fuel, in.classify(ctx, fn, rc, ctx.Err())
	}
	if rc != 0 {
		return nil, fuel, &abi.Error{Code: abi.CodeABI, Stderr: in.stderr.String(),
			Message: fmt.Sprintf("%s returned status %d without an error message", fn, rc)}
	}
	// A guest that exited during the call (proc_exit(0)) took its memory
	// with it: its answer is Extism's output, empty, as it always was.
	if direct && !in.guest.IsClosed() {
		d, ok, err := in.takeOutput(fn, maxOut)
		if err != nil {
			return nil, fuel, err
		}
		if ok {
			out = d
		}
	}
	if len(out) > maxOut {
		return nil, fuel, abi.Errorf(abi.CodeOutputTooLarge, "%s output is %d bytes, max_output_bytes is %d", fn, len(out), maxOut)
	}
	return out, fuel, nil
}

// extismContext gives ctx the values go-sdk's host functions look up, as
// an Extism call would.
func (in *instance) extismContext(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, extism.PluginCtxKey("extism"), in.kernel.mod)
	return context.WithValue(ctx, extism.PluginCtxKey("plugin"), in.p)
}

// export is the guest's export name, looked up once.
func (in *instance) export(name string) api.Function {
	if in.guest == nil {
		return nil
	}
	if f, ok := in.exports[name]; ok {
		return f
	}
	f := in.guest.ExportedFunction(name)
	if in.exports == nil {
		in.exports = map[string]api.Function{}
	}
	in.exports[name] = f
	return f
}

// callRaw calls the guest's export name with params, outside Extism's
// input and output, as part of the call ctx belongs to (or, when it
// belongs to none, as a call of its own, unmetered but for the deadline).
func (in *instance) callRaw(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	if in.guest == nil || in.guest.IsClosed() {
		return nil, errors.New("module is closed")
	}
	f := in.export(name)
	if f == nil {
		return nil, fmt.Errorf("unknown function: %s", name)
	}
	if _, ok := ctx.Value(callStateKey{}).(*callState); !ok {
		ctx = withCallState(ctx, &callState{maxBytes: math.MaxInt, inst: in})
	}
	return f.Call(in.extismContext(ctx), params...)
}

// callDirect is what Extism's Call does for a guest that takes its request
// and leaves its answer in its own memory, without the kernel calls that
// would change nothing: the kernel is reset only when something used it
// since it last was, and its error and output are read only when the
// guest set one during the call.
func (in *instance) callDirect(ctx context.Context, name string) (uint32, []byte, error) {
	k := &in.kernel
	if k.dirty {
		k.reset(in.extismContext(ctx))
	}
	res, err := in.callRaw(ctx, name)
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		// As Extism: a guest that exited with 0 succeeded.
		if exit.ExitCode() == 0 {
			err = nil
		}
		if len(res) == 0 {
			res = []uint64{uint64(exit.ExitCode())}
		}
	}
	var rc uint32
	switch {
	case len(res) > 0:
		rc = api.DecodeU32(res[0])
	case err != nil:
		rc = 1
	}
	if err != nil || !k.answered {
		return rc, nil, err
	}
	var guestErr error
	if msg := in.p.GetErrorWithContext(in.extismContext(ctx)); msg != "" {
		guestErr = errors.New(msg)
	}
	out, err := in.p.GetOutputWithContext(in.extismContext(ctx))
	if err != nil {
		return rc, nil, errors.Join(guestErr, fmt.Errorf("failed to get output: %v", err))
	}
	return rc, out, guestErr
}

// classify turns a failed call into the error kinds of the ABI.
func (in *instance) classify(ctx context.Context, fn string, rc uint32, err error) error {
	// The deadline first: a guest stopped at its next return to the host
	// (meter.go) surfaces as a host function's panic, but the cause is the
	// context.
	switch ctx.Err() {
	case context.DeadlineExceeded:
		return &abi.Error{Code: abi.CodeTimeout, Message: fn + " passed its deadline", Stderr: in.stderr.String()}
	case context.Canceled:
		return fmt.Errorf("%s: %w", fn, context.Canceled)
	}
	if rc == 0 && err.Error() == "module is closed" {
		return errStale
	}
	// The Extism error a guest set (error_set) survives a trap: Extism
	// returns the trap without reading it, the kernel (a module of its own)
	// still holds it, and the host reads it here, bounded like any output
	// (bounds.go). A guest without stderr (AssemblyScript, C without WASI)
	// says why it is about to trap this way.
	msg := in.p.GetError()
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		// A Go guest exits with 2 after a panic or a fatal runtime error
		// (out of memory, stack overflow) and has printed why on stderr.
		return &abi.Error{Code: abi.CodeTrap, Stderr: in.stderr.String(),
			Message: fmt.Sprintf("%s: guest exited with code %d%s", fn, exit.ExitCode(), guestSaid(msg))}
	}
	// The guest returned non-zero after setting an Extism error: it says it
	// could not make sense of the call (its ABI misuse report).
	if msg != "" && msg == err.Error() {
		return &abi.Error{Code: abi.CodeABI, Stderr: in.stderr.String(),
			Message: fmt.Sprintf("%s failed (status %d): %s", fn, rc, transport.ClipMessage(msg))}
	}
	// Anything else is a Wasm trap: unreachable, out-of-bounds access,
	// memory.grow beyond the cap, a host function refusing a bad pointer.
	return &abi.Error{Code: abi.CodeTrap, Stderr: in.stderr.String(),
		Message: fmt.Sprintf("%s trapped: %s%s", fn, transport.ClipMessage(err.Error()), guestSaid(msg))}
}

// guestSaid renders the Extism error a guest set before it trapped.
func guestSaid(msg string) string {
	if msg == "" {
		return ""
	}
	return "; the guest's error (error_set) before it: " + transport.ClipMessage(msg)
}

func (in *instance) close(ctx context.Context) { _ = in.p.Close(ctx) }

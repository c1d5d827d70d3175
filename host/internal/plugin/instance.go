package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	extism "github.com/agentanvil/anvil/host/internal/extism"
	"github.com/agentanvil/anvil/host/internal/wazero"
	"github.com/agentanvil/anvil/host/internal/wazero/experimental"
	"github.com/agentanvil/anvil/host/internal/wazero/sys"

	"github.com/agentanvil/anvil/abi"
)

// instance is one instantiated guest. It is used by one call at a time: a
// Wasm instance is not safe for concurrent calls, and after any failed call
// it is thrown away, because a guest that trapped or was stopped half-way
// is in an unknown state (a Go guest keeps running corrupted).
type instance struct {
	p      *extism.Plugin
	stderr *stderrBuffer
	// io is the address of the guest's direct-I/O control block
	// (directio.go), 0 while calls go through Extism's input and output.
	io uint32
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
	tail := newStderrBuffer(stderrKeep)
	cfg := wazero.NewModuleConfig().WithStderr(tail)
	p, err := w.compiled.Instance(experimental.WithMemoryAllocator(ctx, memoryAllocator()),
		extism.PluginInstanceConfig{ModuleConfig: cfg})
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	w.instances.Add(1)
	return &instance{p: p, stderr: tail}, nil
}

// minWarmup is the least time an instance gets to warm up. Warming is not
// an invocation, and a Go runtime's first start on a loaded machine can
// take longer than a tight per-case deadline; a guest that never finishes
// starting is still stopped.
const minWarmup = 10 * time.Second

// warm runs the guest's runtime initialisation (a Go guest's _initialize
// and package inits) and anvil_describe once, so that cost is paid before
// the instance serves a case, outside that case's deadline. It returns the
// descriptor JSON. The call has a guard without Services: a judge call is
// refused, and log records go to the runtime logger within the same
// bounds as an invocation's.
func (w *wasmPlugin) warm(ctx context.Context, in *instance) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, max(w.opts.Limits.Timeout.Std(), minWarmup))
	defer cancel()
	g := newGuard(nil, w.info, w.opts, w.logger)
	defer g.finish(ctx)
	return in.call(withGuard(ctx, g), abi.ExportDescribe, nil, w.opts.Limits.MaxOutputBytes)
}

// call runs one export. The error is an *abi.Error without plugin name
// (the caller names it) for a guest fault, errStale, or the caller's
// context error when the caller gave up; in every error case the instance
// must be discarded.
func (in *instance) call(ctx context.Context, fn string, input []byte, maxOut int) ([]byte, error) {
	in.stderr.Reset()
	st := &callState{maxBytes: maxOut}
	ctx = withCallState(ctx, st)
	direct := in.io != 0 && fn != abi.ExportDescribe
	if direct {
		if in.p.Closed() {
			return nil, errStale // its memory may be gone: do not touch it
		}
		if err := in.putInput(ctx, input); err != nil {
			return nil, err
		}
	}
	var rc uint32
	var out []byte
	var err error
	if direct {
		rc, out, err = in.p.CallDirect(ctx, fn)
	} else {
		rc, out, err = in.p.CallWithContext(ctx, fn, input)
	}
	if st.refused != nil {
		// A bound stopped Extism before it copied a block (see bounds.go).
		e := *st.refused
		e.Message = fn + ": " + e.Message
		e.Stderr = in.stderr.String()
		return nil, &e
	}
	if err != nil {
		return nil, in.classify(ctx, fn, rc, err)
	}
	if ctx.Err() != nil {
		// The context ended while the guest ran. close-on-context-done
		// stops a guest at its next check, from a watcher goroutine, so a
		// guest that was about to return may finish first; its answer is
		// still late, and its module may be closing under it. (Before
		// Extism's kernel left the guest's runtime, the kernel call
		// writing the output checked the context and failed too.)
		return nil, in.classify(ctx, fn, rc, ctx.Err())
	}
	if rc != 0 {
		return nil, &abi.Error{Code: abi.CodeABI, Stderr: in.stderr.String(),
			Message: fmt.Sprintf("%s returned status %d without an error message", fn, rc)}
	}
	// A guest that exited during the call (proc_exit(0)) took its memory
	// with it: its answer is Extism's output, empty, as it always was.
	if direct && !in.p.Closed() {
		d, ok, err := in.takeOutput(fn, maxOut)
		if err != nil {
			return nil, err
		}
		if ok {
			out = d
		}
	}
	if len(out) > maxOut {
		return nil, abi.Errorf(abi.CodeOutputTooLarge, "%s output is %d bytes, max_output_bytes is %d", fn, len(out), maxOut)
	}
	return out, nil
}

// classify turns a failed call into the error kinds of the ABI.
func (in *instance) classify(ctx context.Context, fn string, rc uint32, err error) error {
	// The deadline first: with close-on-context-done, a stopped guest
	// surfaces as an exit error or as a host function's panic, whichever
	// it was doing, but the cause is the context.
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
			Message: fmt.Sprintf("%s failed (status %d): %s", fn, rc, clipMessage(msg))}
	}
	// Anything else is a Wasm trap: unreachable, out-of-bounds access,
	// memory.grow beyond the cap, a host function refusing a bad pointer.
	return &abi.Error{Code: abi.CodeTrap, Stderr: in.stderr.String(),
		Message: fmt.Sprintf("%s trapped: %s%s", fn, clipMessage(err.Error()), guestSaid(msg))}
}

// guestSaid renders the Extism error a guest set before it trapped.
func guestSaid(msg string) string {
	if msg == "" {
		return ""
	}
	return "; the guest's error (error_set) before it: " + clipMessage(msg)
}

func (in *instance) close(ctx context.Context) { _ = in.p.Close(ctx) }

// clipMessage bounds a message that may carry a whole Wasm stack trace.
func clipMessage(s string) string {
	const max = 2 << 10
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

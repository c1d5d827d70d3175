package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	extism "github.com/extism/go-sdk"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// wasmPlugin is a plugin running in wazero through Extism, one sandboxed
// instance per concurrent call.
//
// Error kinds, as the engine sees them: a metric error is in the result
// and the instance is kept; a trap (panic, OOM, out-of-bounds,
// unreachable, guest exit), a timeout, an ABI violation (output that is not
// the promised JSON, a non-zero status, a result breaking the ABI's rules)
// and output_too_large are the error return, an *abi.Error naming
// plugin@version and digest, and the instance is discarded and replaced
// lazily. A caller that cancels gets its own context error back.
type wasmPlugin struct {
	info     transport.Info
	opts     transport.Options
	logger   *slog.Logger
	compiled *extism.CompiledPlugin
	pool     *pool
	// instances counts instances ever created: a replaced instance shows.
	instances atomic.Int64
	// directIO: the module offers anvil_io (directio.go); set at load.
	directIO bool
}

var _ transport.Plugin = (*wasmPlugin)(nil)

func (w *wasmPlugin) Info() transport.Info { return w.info }

func (w *wasmPlugin) Prepare(ctx context.Context, svc transport.Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	return transport.PrepareVia(ctx, w, wasmOps, svc, req)
}

func (w *wasmPlugin) Measure(ctx context.Context, svc transport.Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	return transport.MeasureVia(ctx, w, wasmOps, svc, req)
}

func (w *wasmPlugin) Node(ctx context.Context, svc transport.Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	return transport.NodeVia(ctx, w, wasmOps, svc, req)
}

// Close waits (until ctx ends) for calls in flight, then frees every
// instance and the plugin's share of the compiled code.
func (w *wasmPlugin) Close(ctx context.Context) error {
	w.pool.close(ctx)
	if err := w.compiled.Close(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("plugin %s: close: %w", w.info.ID(), err)
	}
	return nil
}

// invoke runs one export on a pooled instance under the invocation's
// limits, decodes its result into out and applies check (nil: none); a
// result that does not decode or fails check is an ABI violation.
// Waiting for a free instance is bounded by ctx only; the deadline starts
// when the guest does. On any fault the instance is discarded, and a call
// that found its instance already exited is retried once on a fresh one,
// since it never ran.
func (w *wasmPlugin) Invoke(ctx context.Context, svc transport.Services, export string, what transport.Doing, req, out any, check func() error) error {
	in, err := transport.EncodeMessage(req)
	if err != nil {
		return transport.Named(w.info, abi.Errorf(abi.CodeABI, "%s: encode request: %v", what, err))
	}
	for attempt := 0; ; attempt++ {
		inst, err := w.pool.get(ctx)
		if err != nil {
			return w.startError(what.String(), err)
		}
		clock := transport.StartClock(ctx, w.opts.Limits.Timeout.Std())
		g := transport.NewGuard(svc, w.info, w.opts, w.logger).ForRequest(req).Timed(clock)
		raw, fuel, cerr := inst.call(withGuard(clock, g), export, in, w.opts.Limits.MaxOutputBytes, w.opts.Limits.MaxFuel)
		if fr, ok := svc.(transport.FuelRecorder); ok && fuel > 0 {
			fr.RecordFuel(fuel)
		}
		clock.Stop()
		g.Finish(ctx)
		if cerr == nil {
			derr := transport.DecodeStrict(raw, out)
			if derr == nil && check != nil {
				derr = check()
			}
			if derr != nil {
				cerr = abi.Errorf(abi.CodeABI, "%s result: %v", export, derr)
			}
		}
		w.pool.put(ctx, inst, cerr == nil)
		switch {
		case cerr == nil:
			return nil
		case errors.Is(cerr, errStale) && attempt == 0:
			continue
		}
		return w.callError(ctx, what.String(), cerr)
	}
}

// callError names a failed call's error and says what was being done.
// ctx is the caller's: when its own deadline passed first, the timeout is
// the caller's, not the plugin's limit.
func (w *wasmPlugin) callError(ctx context.Context, what string, err error) error {
	var ae *abi.Error
	if !errors.As(err, &ae) {
		return fmt.Errorf("plugin %s@%s: %s: %w", w.info.ID(), w.info.Digest, what, err)
	}
	switch {
	case ae.Code == abi.CodeTimeout && ctx.Err() != nil:
		ae.Message = what + ": the caller's deadline passed; instance discarded"
	case ae.Code == abi.CodeTimeout:
		ae.Message = fmt.Sprintf("%s: passed its %s deadline; instance discarded", what, w.opts.Limits.Timeout.Std())
	default:
		ae.Message = what + ": " + ae.Message
	}
	return transport.Named(w.info, ae)
}

// startError reports a call that could not get an instance.
func (w *wasmPlugin) startError(what string, err error) error {
	var ae *abi.Error
	if errors.As(err, &ae) {
		ae.Message = what + ": start instance: " + ae.Message
		return transport.Named(w.info, ae)
	}
	return fmt.Errorf("plugin %s@%s: %s: waiting for an instance: %w", w.info.ID(), w.info.Digest, what, err)
}

func (w *wasmPlugin) Own(e *abi.Error) *abi.Error { return transport.OwnError(w.info, e) }

// wasmOps are the guest exports behind the typed calls.
var wasmOps = transport.Operations{Prepare: abi.ExportPrepare, Measure: abi.ExportMeasure, Node: abi.ExportNode}

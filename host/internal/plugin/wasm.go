package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	extism "github.com/extism/go-sdk"

	"github.com/agentanvil/anvil/abi"
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
	info     Info
	opts     Options
	logger   *slog.Logger
	compiled *extism.CompiledPlugin
	pool     *pool
	// instances counts instances ever created: a replaced instance shows.
	instances atomic.Int64
	// directIO: the module offers anvil_io (directio.go); set at load.
	directIO bool
}

var _ Plugin = (*wasmPlugin)(nil)

func (w *wasmPlugin) Info() Info { return w.info }

func (w *wasmPlugin) Prepare(ctx context.Context, svc Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	return prepareVia(ctx, w, wasmOps, svc, req)
}

func (w *wasmPlugin) Measure(ctx context.Context, svc Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	return measureVia(ctx, w, wasmOps, svc, req)
}

func (w *wasmPlugin) Node(ctx context.Context, svc Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	return nodeVia(ctx, w, wasmOps, svc, req)
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
func (w *wasmPlugin) invoke(ctx context.Context, svc Services, export string, what doing, req, out any, check func() error) error {
	in, err := encodeMessage(req)
	if err != nil {
		return named(w.info, abi.Errorf(abi.CodeABI, "%s: encode request: %v", what, err))
	}
	for attempt := 0; ; attempt++ {
		inst, err := w.pool.get(ctx)
		if err != nil {
			return w.startError(what.String(), err)
		}
		callCtx, cancel := context.WithTimeout(ctx, w.opts.Limits.Timeout.Std())
		g := newGuard(svc, w.info, w.opts, w.logger).forRequest(req)
		raw, fuel, cerr := inst.call(withGuard(callCtx, g), export, in, w.opts.Limits.MaxOutputBytes, w.opts.Limits.MaxFuel)
		if fr, ok := svc.(FuelRecorder); ok && fuel > 0 {
			fr.RecordFuel(fuel)
		}
		cancel()
		g.finish(ctx)
		if cerr == nil {
			derr := decodeStrict(raw, out)
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
	return named(w.info, ae)
}

// startError reports a call that could not get an instance.
func (w *wasmPlugin) startError(what string, err error) error {
	var ae *abi.Error
	if errors.As(err, &ae) {
		ae.Message = what + ": start instance: " + ae.Message
		return named(w.info, ae)
	}
	return fmt.Errorf("plugin %s@%s: %s: waiting for an instance: %w", w.info.ID(), w.info.Digest, what, err)
}

func (w *wasmPlugin) own(e *abi.Error) *abi.Error { return ownError(w.info, e) }

// checkMeasure applies the rules every measure result must meet, whatever
// language the guest is written in.
func checkMeasure(r *abi.MeasureResult) error {
	if r.Score != nil && !(*r.Score >= 0 && *r.Score <= 1) {
		return fmt.Errorf("score %v is outside [0,1]", *r.Score)
	}
	if !(r.Threshold >= 0 && r.Threshold <= 1) {
		return fmt.Errorf("threshold %v is outside [0,1]", r.Threshold)
	}
	if r.Error == nil && r.Score == nil {
		return errors.New("neither score nor error")
	}
	return nil
}

// wasmOps are the guest exports behind the typed calls.
var wasmOps = operations{prepare: abi.ExportPrepare, measure: abi.ExportMeasure, node: abi.ExportNode}

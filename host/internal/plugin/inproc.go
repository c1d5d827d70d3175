package plugin

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// inproc runs an sdk.Plugin linked into the host binary. It applies the
// same grants, budgets, deadline and output cap as the wasm transport, and
// round-trips every message through JSON so that a kind sees exactly what
// it would see in a sandbox.
type inproc struct {
	p    *sdk.Plugin
	info Info
	opts Options
}

// Inproc wraps a linked plugin.
func Inproc(p *sdk.Plugin, opts Options) Plugin {
	opts.Limits = opts.Limits.WithDefaults()
	d := p.Describe()
	return &inproc{p: p, opts: opts, info: Info{
		Descriptor: d,
		Digest:     "inproc:" + d.Name + "@" + d.Version,
		Transport:  TransportInproc,
	}}
}

func (ip *inproc) Info() Info { return ip.info }

func (ip *inproc) Close(context.Context) error { return nil }

func (ip *inproc) Prepare(ctx context.Context, svc Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	var res abi.PrepareResult
	err := ip.call(ctx, svc, req, &res, func(ctx context.Context, h sdk.Host, in []byte) (any, error) {
		var r abi.PrepareRequest
		if err := json.Unmarshal(in, &r); err != nil {
			return nil, err
		}
		return ip.p.Prepare(ctx, h, &r), nil
	})
	if err != nil {
		return nil, err
	}
	res.Error = ownError(ip.info, res.Error)
	return &res, nil
}

func (ip *inproc) Measure(ctx context.Context, svc Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	var res abi.MeasureResult
	// The request as the kind would decode it, without the JSON round
	// trip when that is known exactly (inproc_request.go).
	if sent, ok := measureRequestAsSent(req); ok {
		err := ip.callDecoded(ctx, svc, req, &res, func(ctx context.Context, h sdk.Host) (any, error) {
			return ip.p.Measure(ctx, h, &sent), nil
		})
		if err != nil {
			return nil, err
		}
		res.Error = ownError(ip.info, res.Error)
		return &res, nil
	}
	err := ip.call(ctx, svc, req, &res, func(ctx context.Context, h sdk.Host, in []byte) (any, error) {
		var r abi.MeasureRequest
		if err := json.Unmarshal(in, &r); err != nil {
			return nil, err
		}
		return ip.p.Measure(ctx, h, &r), nil
	})
	if err != nil {
		return nil, err
	}
	res.Error = ownError(ip.info, res.Error)
	return &res, nil
}

func (ip *inproc) Node(ctx context.Context, svc Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	var res abi.NodeResult
	err := ip.call(ctx, svc, req, &res, func(ctx context.Context, h sdk.Host, in []byte) (any, error) {
		var r abi.NodeRequest
		if err := json.Unmarshal(in, &r); err != nil {
			return nil, err
		}
		return ip.p.Node(ctx, h, &r), nil
	})
	if err != nil {
		return nil, err
	}
	res.Error = ownError(ip.info, res.Error)
	return &res, nil
}

// call marshals req and runs fn on it (see run) under the deadline.
func (ip *inproc) call(ctx context.Context, svc Services, req, out any,
	fn func(context.Context, sdk.Host, []byte) (any, error)) error {
	ctx, cancel := context.WithTimeout(ctx, ip.opts.Limits.Timeout.Std())
	defer cancel()
	in, merr := json.Marshal(req)
	if merr != nil {
		return named(ip.info, abi.Errorf(abi.CodeABI, "encode request: %v", merr))
	}
	return ip.run(ctx, svc, req, out, func(ctx context.Context, h sdk.Host) (any, error) { return fn(ctx, h, in) })
}

// callDecoded is call for a request already in the form the kind would
// decode (measureRequestAsSent): nothing to encode or decode on the way in.
func (ip *inproc) callDecoded(ctx context.Context, svc Services, req, out any,
	fn func(context.Context, sdk.Host) (any, error)) error {
	ctx, cancel := context.WithTimeout(ctx, ip.opts.Limits.Timeout.Std())
	defer cancel()
	return ip.run(ctx, svc, req, out, fn)
}

// run runs fn under ctx's deadline with a guarded host, checks the output
// cap and unmarshals into out. A panic in the kind is a trap.
func (ip *inproc) run(ctx context.Context, svc Services, req, out any,
	fn func(context.Context, sdk.Host) (any, error)) (err error) {
	g := newGuard(svc, ip.info, ip.opts, nil).forRequest(req)
	defer g.finish(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = named(ip.info, abi.Errorf(abi.CodeTrap, "panic: %v", r))
		}
	}()
	res, ferr := fn(ctx, hostFor(g))
	if ferr != nil {
		return named(ip.info, abi.Errorf(abi.CodeABI, "decode request: %v", ferr))
	}
	if ctx.Err() != nil && ctx.Err() != context.Canceled {
		return named(ip.info, abi.Errorf(abi.CodeTimeout, "invocation passed its %s deadline", ip.opts.Limits.Timeout.Std()))
	}
	// A metric's result is measured for the cap, and copied as the decoder
	// would give it, without encoding when both are known exactly
	// (inproc_request.go).
	if mr, ok := res.(*abi.MeasureResult); ok {
		if n, ok := measureResultLen(mr); ok {
			if n > ip.opts.Limits.MaxOutputBytes {
				return tooLarge(ip, n)
			}
			if o, ok := out.(*abi.MeasureResult); ok && measureResultAsDecoded(mr, o, true) {
				return nil
			}
		}
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		return named(ip.info, abi.Errorf(abi.CodeABI, "encode result: %v", merr))
	}
	if len(b) > ip.opts.Limits.MaxOutputBytes {
		return tooLarge(ip, len(b))
	}
	if mr, ok := res.(*abi.MeasureResult); ok {
		if o, ok := out.(*abi.MeasureResult); ok && measureResultAsDecoded(mr, o, false) {
			return nil
		}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return named(ip.info, abi.Errorf(abi.CodeABI, "decode result: %v", err))
	}
	return nil
}

func tooLarge(ip *inproc, n int) error {
	return named(ip.info, abi.Errorf(abi.CodeOutputTooLarge, "result is %d bytes, max_output_bytes is %d", n, ip.opts.Limits.MaxOutputBytes))
}

// guardHost adapts a guard to sdk.Host; the wasm guest SDK reaches the same
// guard through the anvil_judge and anvil_log host functions.
type guardHost struct{ g *guard }

func hostFor(g *guard) sdk.Host { return guardHost{g} }

func (h guardHost) Judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	resps, err := h.g.judge(ctx, reqs)
	if err != nil {
		return nil, err
	}
	return resps, nil
}

func (h guardHost) Log(ctx context.Context, level slog.Level, msg string, attrs ...any) {
	h.g.log(ctx, abi.LogRecord{Level: sdk.LevelName(level), Message: msg, Attrs: sdk.AttrMap(attrs...)})
}

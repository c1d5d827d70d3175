// Package inproc is the inproc transport: a kind linked into the host
// binary through package sdk.
//
// Invariant: a linked kind is held to what a sandboxed one is — the same
// grants, budgets, deadline and output cap through a transport.Guard, and
// every message round-tripped through JSON, so it shares no memory with
// the host and sees exactly what it would see in a sandbox.
package inproc

import (
	"context"
	"log/slog"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/sdk"
)

// inproc runs an sdk.Plugin linked into the host binary. It applies the
// same grants, budgets, deadline and output cap as the wasm transport, and
// round-trips every message through JSON so that a kind sees exactly what
// it would see in a sandbox.
type inproc struct {
	p    *sdk.Plugin
	info transport.Info
	opts transport.Options
}

// New wraps a linked plugin.
func New(p *sdk.Plugin, opts transport.Options) transport.Plugin {
	opts.Limits = opts.Limits.WithDefaults()
	d := p.Describe()
	return &inproc{p: p, opts: opts, info: transport.Info{
		Descriptor: d,
		Digest:     "inproc:" + d.Name + "@" + d.Version,
		Transport:  transport.TransportInproc,
	}}
}

func (ip *inproc) Info() transport.Info { return ip.info }

func (ip *inproc) Close(context.Context) error { return nil }

func (ip *inproc) Prepare(ctx context.Context, svc transport.Services, req *abi.PrepareRequest) (*abi.PrepareResult, error) {
	res, err := inprocCall(ctx, ip, svc, req, ip.p.Prepare)
	if err != nil {
		return nil, err
	}
	res.Error = transport.OwnError(ip.info, res.Error)
	return res, nil
}

func (ip *inproc) Measure(ctx context.Context, svc transport.Services, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	res, err := inprocCall(ctx, ip, svc, req, ip.p.Measure)
	if err != nil {
		return nil, err
	}
	res.Error = transport.OwnError(ip.info, res.Error)
	return res, nil
}

func (ip *inproc) Node(ctx context.Context, svc transport.Services, req *abi.NodeRequest) (*abi.NodeResult, error) {
	res, err := inprocCall(ctx, ip, svc, req, ip.p.Node)
	if err != nil {
		return nil, err
	}
	res.Error = transport.OwnError(ip.info, res.Error)
	return res, nil
}

// inprocCall hands req to the kind as a sandbox would — encoded, then
// decoded as the guest SDK decodes it, so the kind shares no memory with
// the host — and reads its answer back the same way: encoded as the guest
// SDK encodes it, held to the output cap and decoded strictly. It runs the
// kind under the deadline with a guarded host; a panic in the kind is a
// trap.
func inprocCall[Req, Res any](ctx context.Context, ip *inproc, svc transport.Services, req *Req,
	kind func(context.Context, sdk.Host, *Req) *Res) (_ *Res, err error) {
	clock := transport.StartClock(ctx, ip.opts.Limits.Timeout.Std())
	defer clock.Stop()
	ctx = clock
	in, err := transport.EncodeMessage(req)
	if err != nil {
		return nil, transport.Named(ip.info, abi.Errorf(abi.CodeABI, "encode request: %v", err))
	}
	sent := new(Req)
	if err := json.Unmarshal(in, sent); err != nil {
		return nil, transport.Named(ip.info, abi.Errorf(abi.CodeABI, "decode request: %v", err))
	}
	g := transport.NewGuard(svc, ip.info, ip.opts, nil).ForRequest(req).Timed(clock)
	defer g.Finish(ctx)
	defer func() {
		if r := recover(); r != nil {
			err = transport.Named(ip.info, abi.Errorf(abi.CodeTrap, "panic: %v", r))
		}
	}()
	res := kind(ctx, hostFor(g), sent)
	if ctx.Err() != nil && ctx.Err() != context.Canceled {
		return nil, transport.Named(ip.info, abi.Errorf(abi.CodeTimeout, "invocation passed its %s deadline", ip.opts.Limits.Timeout.Std()))
	}
	b, err := transport.EncodeMessage(res)
	if err != nil {
		return nil, transport.Named(ip.info, abi.Errorf(abi.CodeABI, "encode result: %v", err))
	}
	if len(b) > ip.opts.Limits.MaxOutputBytes {
		return nil, transport.Named(ip.info, abi.Errorf(abi.CodeOutputTooLarge, "result is %d bytes, max_output_bytes is %d", len(b), ip.opts.Limits.MaxOutputBytes))
	}
	out := new(Res)
	if err := transport.DecodeStrict(b, out); err != nil {
		return nil, transport.Named(ip.info, abi.Errorf(abi.CodeABI, "result: %v", err))
	}
	return out, nil
}

// guardHost adapts a guard to sdk.Host; the wasm guest SDK reaches the same
// guard through the anvil_judge and anvil_log host functions.
type guardHost struct{ g *transport.Guard }

func hostFor(g *transport.Guard) sdk.Host { return guardHost{g} }

var _ sdk.Embedder = guardHost{}

func (h guardHost) Judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	resps, err := h.g.Judge(ctx, reqs)
	if err != nil {
		return nil, err
	}
	return resps, nil
}

func (h guardHost) Embed(ctx context.Context, req abi.EmbedRequest) ([][]float64, error) {
	res := h.g.Embed(ctx, req)
	if res.Error != nil {
		return nil, res.Error
	}
	return res.Vectors, nil
}

func (h guardHost) Log(ctx context.Context, level slog.Level, msg string, attrs ...any) {
	h.g.Log(ctx, abi.LogRecord{Level: sdk.LevelName(level), Message: msg, Attrs: sdk.AttrMap(attrs...)})
}

package wasm

import (
	"context"
	"fmt"
	"math"

	extism "github.com/extism/go-sdk"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// invocationKey carries the guard of the call a host function runs in.
// The host functions are linked once per plugin; what differs per call
// (the Services, the budgets spent so far) travels in the call's context.
type invocationKey struct{}

func withGuard(ctx context.Context, g *transport.Guard) context.Context {
	return context.WithValue(ctx, invocationKey{}, g)
}

// guardFrom returns the guard of the call ctx belongs to. Every call the
// host makes carries one; a context without one gets a guard with no
// Services, which serves nothing.
func (w *wasmPlugin) guardFrom(ctx context.Context) *transport.Guard {
	if g, ok := ctx.Value(invocationKey{}).(*transport.Guard); ok {
		return g
	}
	return transport.NewGuard(nil, w.info, w.opts, w.logger)
}

// hostFunctions are the functions linked into the guest's
// extism:host/user namespace. All are thin: reading a block from guest
// memory is all they add to the guard, which the process transport's
// callbacks share. When the judge capability is not granted, anvil_judge
// and anvil_embed are stubs that hold no guard and answer
// capability_denied without reading the request: a Go guest imports
// anvil_judge whether it judges or not, so the import must resolve, but
// the real judge must not be reachable.
func (w *wasmPlugin) hostFunctions() []extism.HostFunction {
	judge := func(ctx context.Context, p *extism.CurrentPlugin, off uint64) *abi.JudgeBatchResult {
		return w.guardFrom(ctx).JudgePayload(ctx, block{p: p, off: off, what: "judge batch"})
	}
	if !w.opts.Grants.Judge {
		judge = func(context.Context, *extism.CurrentPlugin, uint64) *abi.JudgeBatchResult {
			deny := transport.NewGuard(nil, w.info, transport.Options{}, nil)
			return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: deny.Denied()}
		}
	}
	embed := func(ctx context.Context, p *extism.CurrentPlugin, off uint64) *abi.EmbedResult {
		return w.guardFrom(ctx).EmbedPayload(ctx, block{p: p, off: off, what: "embed request"})
	}
	if !w.opts.Grants.Judge {
		embed = func(context.Context, *extism.CurrentPlugin, uint64) *abi.EmbedResult {
			deny := transport.NewGuard(nil, w.info, transport.Options{}, nil)
			return &abi.EmbedResult{Vectors: [][]float64{}, Error: deny.Denied()}
		}
	}
	fns := []extism.HostFunction{
		extism.NewHostFunctionWithStack(abi.HostJudge,
			func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
				res := judge(ctx, p, stack[0])
				b, err := transport.EncodeMessage(res)
				if err != nil {
					res = &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: transport.Named(w.info, abi.Errorf(abi.CodeJudge, "encode judge result: %v", err))}
					b, _ = transport.EncodeMessage(res)
				}
				stack[0] = writeResult(ctx, p, abi.HostJudge, b)
			},
			[]extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR}),
		extism.NewHostFunctionWithStack(abi.HostEmbed,
			func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
				res := embed(ctx, p, stack[0])
				b, err := transport.EncodeMessage(res)
				if err != nil {
					res = &abi.EmbedResult{Vectors: [][]float64{}, Error: transport.Named(w.info, abi.Errorf(abi.CodeJudge, "encode embed result: %v", err))}
					b, _ = transport.EncodeMessage(res)
				}
				stack[0] = writeResult(ctx, p, abi.HostEmbed, b)
			},
			[]extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR}),
		extism.NewHostFunctionWithStack(abi.HostLog,
			func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
				w.guardFrom(ctx).LogPayload(ctx, block{p: p, off: stack[0], what: "log record"})
			},
			[]extism.ValueType{extism.ValueTypePTR}, nil),
	}
	for i := range fns {
		fns[i].SetNamespace(abi.HostNamespace)
	}
	fns = append(fns, abortFunction())
	fns = append(fns, w.meterFunctions()...)
	return append(fns, w.kernelFunctions()...)
}

// writeResult copies a host function's result into a new Extism block of
// the guest and registers it with the kernel's block table; its offset is
// the function's return value.
func writeResult(ctx context.Context, p *extism.CurrentPlugin, fn string, b []byte) uint64 {
	off, err := p.WriteBytes(b)
	if err != nil {
		// The guest's Extism memory is exhausted: nothing sane can be
		// returned, so this becomes a trap.
		panic(fmt.Errorf("%s: write %d-byte result: %w", fn, len(b), err))
	}
	if st, ok := ctx.Value(callStateKey{}).(*callState); ok && st.inst != nil {
		st.inst.kernel.hostBlock(off, uint64(len(b)))
	}
	return off
}

// block is an Extism memory block a guest passed to a host function. Its
// length is read from Extism's block table first, so the guard can refuse
// a block before a byte of it is copied out of guest memory.
type block struct {
	p    *extism.CurrentPlugin
	off  uint64
	what string
}

func (b block) Size() (int, *abi.Error) {
	n, err := b.p.Length(b.off)
	if err != nil {
		return 0, abi.Errorf(abi.CodeABI, "%s: bad memory block %d: %v", b.what, b.off, err)
	}
	return int(min(n, math.MaxInt)), nil
}

func (b block) Read() ([]byte, *abi.Error) {
	raw, err := b.p.ReadBytes(b.off)
	if err != nil {
		return nil, abi.Errorf(abi.CodeABI, "%s: read memory block %d: %v", b.what, b.off, err)
	}
	return raw, nil
}

package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	extism "github.com/extism/go-sdk"

	"github.com/agentanvil/anvil/abi"
)

// invocationKey carries the guard of the invocation a host function runs
// in. The host functions are linked once per plugin; what differs per call
// (the Services, the budgets spent so far) travels in the call's context.
type invocationKey struct{}

func withGuard(ctx context.Context, g *guard) context.Context {
	return context.WithValue(ctx, invocationKey{}, g)
}

func guardFrom(ctx context.Context) *guard {
	g, _ := ctx.Value(invocationKey{}).(*guard)
	return g
}

// hostFunctions are the functions linked into the guest's
// extism:host/user namespace. When the judge capability is not granted,
// anvil_judge is a stub that answers capability_denied without reading the
// request: a Go guest imports anvil_judge whether it judges or not, so the
// import must resolve, but the real judge must not be reachable.
func (w *wasmPlugin) hostFunctions() []extism.HostFunction {
	judge := w.judgeDenied
	if w.opts.Grants.Judge {
		judge = w.judge
	}
	fns := []extism.HostFunction{
		extism.NewHostFunctionWithStack(abi.HostJudge,
			func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
				res := judge(ctx, p, stack[0])
				b, err := json.Marshal(res)
				if err != nil {
					res = &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: named(w.info, abi.Errorf(abi.CodeJudge, "encode judge result: %v", err))}
					b, _ = json.Marshal(res)
				}
				off, err := p.WriteBytes(b)
				if err != nil {
					// The guest's Extism memory is exhausted: nothing sane
					// can be returned, so this becomes a trap.
					panic(fmt.Errorf("anvil_judge: write %d-byte result: %w", len(b), err))
				}
				stack[0] = off
			},
			[]extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR}),
		extism.NewHostFunctionWithStack(abi.HostLog,
			func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
				w.log(ctx, p, stack[0])
			},
			[]extism.ValueType{extism.ValueTypePTR}, nil),
	}
	for i := range fns {
		fns[i].SetNamespace(abi.HostNamespace)
	}
	return fns
}

// judge is the granted anvil_judge: it reads a JudgeBatch, runs it through
// the invocation's guard and returns the result. Every refusal is data.
func (w *wasmPlugin) judge(ctx context.Context, p *extism.CurrentPlugin, off uint64) *abi.JudgeBatchResult {
	g := guardFrom(ctx)
	if g == nil {
		return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: named(w.info, abi.Errorf(abi.CodeCapability,
			"judge calls are only possible while measuring or running a node, not while describing"))}
	}
	raw, aerr := w.readBlock(p, off, "judge batch")
	if aerr != nil {
		return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: aerr}
	}
	var batch abi.JudgeBatch
	if err := json.Unmarshal(raw, &batch); err != nil {
		return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: named(w.info, abi.Errorf(abi.CodeABI, "decode judge batch: %v", err))}
	}
	if len(batch.Requests) == 0 {
		return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}}
	}
	resps, jerr := g.judge(ctx, batch.Requests)
	if jerr != nil {
		return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: jerr}
	}
	return &abi.JudgeBatchResult{Responses: resps}
}

// judgeDenied is the stub anvil_judge. It holds no Services, so nothing it
// does can reach a judge; the refusal is the guard's own, word for word.
func (w *wasmPlugin) judgeDenied(ctx context.Context, _ *extism.CurrentPlugin, _ uint64) *abi.JudgeBatchResult {
	_, err := newGuard(nil, w.info, Grants{}, w.opts.Limits).judge(ctx, nil)
	return &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: err}
}

// log forwards a LogRecord to the invocation's Services, or to the runtime
// logger outside an invocation. A malformed record is dropped with a host
// warning: logging must never be able to fail a case.
func (w *wasmPlugin) log(ctx context.Context, p *extism.CurrentPlugin, off uint64) {
	raw, aerr := w.readBlock(p, off, "log record")
	if aerr != nil {
		w.logger.Warn("guest log record refused", "plugin", w.info.ID(), "error", aerr.Message)
		return
	}
	var rec abi.LogRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		w.logger.Warn("guest log record does not decode", "plugin", w.info.ID(), "error", err)
		return
	}
	if g := guardFrom(ctx); g != nil {
		g.log(ctx, rec)
		return
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(rec.Level)); err != nil {
		level = slog.LevelInfo
	}
	args := []any{"plugin", w.info.ID()}
	for k, v := range rec.Attrs {
		args = append(args, k, v)
	}
	w.logger.Log(ctx, level, rec.Message, args...)
}

// readBlock copies an Extism memory block the guest passed to a host
// function, refusing it before copying when it is larger than the
// per-invocation payload cap.
func (w *wasmPlugin) readBlock(p *extism.CurrentPlugin, off uint64, what string) ([]byte, *abi.Error) {
	n, err := p.Length(off)
	if err != nil {
		return nil, named(w.info, abi.Errorf(abi.CodeABI, "%s: bad memory block %d: %v", what, off, err))
	}
	if max := w.opts.Limits.MaxOutputBytes; n > uint64(max) {
		return nil, named(w.info, abi.Errorf(abi.CodeOutputTooLarge, "%s is %d bytes, max_output_bytes is %d", what, n, max))
	}
	b, err := p.ReadBytes(off)
	if err != nil {
		return nil, named(w.info, abi.Errorf(abi.CodeABI, "%s: read memory block %d: %v", what, off, err))
	}
	return b, nil
}

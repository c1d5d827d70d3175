package process

import (
	"context"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/plugin/transport"
	"github.com/agentanvil/anvil/sdk/native"
)

// callbacks is the host's callback service for one process: judge
// batches and log records, routed to the invocation whose token they
// carry and handed to its guard — the same guard the Wasm host functions
// use, so grants, budgets and log bounds are one mechanism. Every refusal
// is data, as in anvil_judge; embed requests go the same way. gRPC has already bounded what it read
// (startProcess sets its receive limit); the guard bounds the rest.
type callbacks struct {
	p  *processPlugin
	pr *proc

	// outsideLogs counts the log records of callbacks that belong to no
	// invocation (while describing, or after the call they were made for
	// returned). Its bounds hold for the process's whole life, so a
	// process cannot flood the host's log between invocations.
	outsideLogs transport.LogTally
	noticed     sync.Once
}

var _ native.HostServer = (*callbacks)(nil)

func tokenOf(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(native.MetaInvocation); len(v) > 0 {
		return v[0]
	}
	return ""
}

// outside is the guard of a callback that belongs to no invocation: it
// has no Services, so it serves no judge call.
func (c *callbacks) outside() *transport.Guard {
	return transport.NewGuard(nil, c.p.info, c.p.opts, c.p.logger).LogsIn(&c.outsideLogs)
}

func (c *callbacks) Judge(ctx context.Context, raw []byte) ([]byte, error) {
	var res *abi.JudgeBatchResult
	if inv := c.pr.lookup(tokenOf(ctx)); inv != nil {
		// The judge calls end with the invocation (its deadline) or with
		// the callback (the guest gave up on it), whichever is first.
		jctx, cancel := context.WithCancel(inv.ctx)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		res = inv.g.JudgePayload(jctx, transport.BytesPayload(raw))
	} else {
		res = c.outside().JudgePayload(ctx, transport.BytesPayload(raw))
	}
	b, err := transport.EncodeMessage(res)
	if err != nil {
		res = &abi.JudgeBatchResult{Responses: []abi.JudgeResponse{}, Error: transport.Named(c.p.info, abi.Errorf(abi.CodeJudge, "encode judge result: %v", err))}
		b, _ = transport.EncodeMessage(res)
	}
	return b, nil
}

// Embed answers an embed request as Judge answers a batch: through the
// invocation's guard, refusals as data.
func (c *callbacks) Embed(ctx context.Context, raw []byte) ([]byte, error) {
	var res *abi.EmbedResult
	if inv := c.pr.lookup(tokenOf(ctx)); inv != nil {
		ectx, cancel := context.WithCancel(inv.ctx)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		res = inv.g.EmbedPayload(ectx, transport.BytesPayload(raw))
	} else {
		res = c.outside().EmbedPayload(ctx, transport.BytesPayload(raw))
	}
	b, err := transport.EncodeMessage(res)
	if err != nil {
		res = &abi.EmbedResult{Vectors: [][]float64{}, Error: transport.Named(c.p.info, abi.Errorf(abi.CodeJudge, "encode embed result: %v", err))}
		b, _ = transport.EncodeMessage(res)
	}
	return b, nil
}

// Log forwards a record to the invocation's guard, or to the runtime
// logger outside an invocation. Logging must never be able to fail a
// case: the answer is always nil.
func (c *callbacks) Log(ctx context.Context, raw []byte) error {
	if inv := c.pr.lookup(tokenOf(ctx)); inv != nil {
		inv.g.LogPayload(inv.ctx, transport.BytesPayload(raw))
		return nil
	}
	c.outside().LogPayload(ctx, transport.BytesPayload(raw))
	if c.outsideLogs.Dropped() > 0 {
		c.noticed.Do(func() {
			c.p.logger.Warn("plugin log records outside an invocation passed the log limits; further ones are dropped",
				"plugin", c.p.info.ID(), "digest", c.p.info.Digest)
		})
	}
	return nil
}

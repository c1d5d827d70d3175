package wasm

import (
	"context"
	"sync"

	"github.com/agentanvil/anvil/host/internal/plugin/transport"
)

// pool bounds how many instances of one plugin exist and hands each to one
// call at a time. Instances are created lazily up to the bound and kept
// warm between calls; a broken one is closed and its slot refilled by the
// next call that needs it.
type pool struct {
	// slots holds one token per instance in use or being created: its
	// capacity is the pool size, so a full channel means callers wait.
	slots chan struct{}
	// done is closed by close, releasing callers still waiting for a slot.
	done    chan struct{}
	newInst func(context.Context) (*instance, error)

	mu     sync.Mutex
	idle   []*instance
	closed bool
}

func newPool(size int, newInst func(context.Context) (*instance, error)) *pool {
	return &pool{slots: make(chan struct{}, size), done: make(chan struct{}), newInst: newInst}
}

// get returns an idle instance or creates one, waiting while all are busy.
// Waiting ends with ctx.
func (p *pool) get(ctx context.Context) (*instance, error) {
	select {
	case <-p.done:
		return nil, transport.ErrClosed
	default:
	}
	select {
	case p.slots <- struct{}{}:
	case <-p.done:
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, transport.ErrClosed
	}
	if n := len(p.idle); n > 0 {
		in := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return in, nil
	}
	p.mu.Unlock()
	in, err := p.newInst(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return in, nil
}

// put returns an instance after a call. A broken one is closed instead of
// kept; so is every instance once the pool is closed.
func (p *pool) put(ctx context.Context, in *instance, healthy bool) {
	p.mu.Lock()
	keep := healthy && !p.closed
	if keep {
		p.idle = append(p.idle, in)
	}
	p.mu.Unlock()
	if !keep {
		in.close(context.WithoutCancel(ctx))
	}
	<-p.slots
}

// add puts a freshly made instance in the idle list without a call.
func (p *pool) add(in *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, in)
}

// close waits (until ctx ends) for calls in flight to return their
// instances, then closes every idle one. Calls that start afterwards fail.
func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	for i := 0; i < cap(p.slots); i++ {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			i = cap(p.slots)
		}
	}
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, in := range idle {
		in.close(context.WithoutCancel(ctx))
	}
}

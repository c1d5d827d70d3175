package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentanvil/anvil/host/internal/judge"
)

// One judge budget for the cluster: the coordinator holds each judge's
// limiter (requests_per_minute, tokens_per_minute, max_concurrency — the
// judge package's own, judge.NewLimiter) and serves permits over NATS
// request/reply; every worker's judge takes a permit before each upstream
// call and gives it back after. A permit is a lease: the worker renews
// the ones it holds, and a lease not renewed (its worker was killed)
// returns to the budget after leaseTTL.

func permitSubject(runID string) string  { return "anvil.permit." + runID }
func releaseSubject(runID string) string { return "anvil.permit." + runID + ".release" }
func renewSubject(runID string) string   { return "anvil.permit." + runID + ".renew" }

const (
	// leaseTTL is how long a permit outlives its last renewal.
	leaseTTL = 10 * time.Second
	// renewEvery is how often a worker renews the permits it holds.
	renewEvery = leaseTTL / 4
	// permitWait bounds one request: the coordinator answers "try again"
	// before the worker's request times out, so no grant is lost in
	// flight.
	permitWait    = 20 * time.Second
	maxPermitMsg  = 4 << 10
	maxRenewMsg   = 256 << 10
	maxLeasesHeld = 4096
)

type permitRequest struct {
	Judge  string `json:"judge"`
	Tokens int    `json:"tokens"`
	Lease  string `json:"lease"`
	Worker string `json:"worker"`
}

type permitReply struct {
	Granted bool   `json:"granted"`
	Error   string `json:"error,omitempty"`
}

type leaseList struct {
	Leases []string `json:"leases"`
}

var leaseRE = runIDRE // 16 hex digits

// permitServer is the coordinator's side.
type permitServer struct {
	log      *slog.Logger
	limiters func(name string) (judge.Limiter, bool)

	mu     sync.Mutex
	leases map[string]*lease
}

type lease struct {
	release func()
	expires time.Time
}

// serve answers permit requests for runID until ctx is done.
func (ps *permitServer) serve(ctx context.Context, nc *nats.Conn, runID string) (stop func(), err error) {
	ps.leases = map[string]*lease{}
	var subs []*nats.Subscription
	stopAll := func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	sub, err := nc.Subscribe(permitSubject(runID), func(m *nats.Msg) { go ps.grant(ctx, m) })
	if err != nil {
		return nil, err
	}
	subs = append(subs, sub)
	if sub, err = nc.Subscribe(releaseSubject(runID), func(m *nats.Msg) {
		var l leaseList
		if decodeStrict(m.Data, maxRenewMsg, &l) == nil {
			for _, id := range l.Leases {
				ps.end(id)
			}
		}
	}); err != nil {
		stopAll()
		return nil, err
	}
	subs = append(subs, sub)
	if sub, err = nc.Subscribe(renewSubject(runID), func(m *nats.Msg) {
		var l leaseList
		if decodeStrict(m.Data, maxRenewMsg, &l) == nil {
			ps.renew(l.Leases)
		}
	}); err != nil {
		stopAll()
		return nil, err
	}
	subs = append(subs, sub)
	sweepCtx, cancel := context.WithCancel(ctx)
	go ps.sweep(sweepCtx)
	return func() { cancel(); stopAll() }, nc.Flush()
}

func (ps *permitServer) grant(ctx context.Context, m *nats.Msg) {
	var req permitRequest
	reply := func(r permitReply) {
		b, _ := json.Marshal(r)
		_ = m.Respond(b)
	}
	if err := decodeStrict(m.Data, maxPermitMsg, &req); err != nil {
		reply(permitReply{Error: err.Error()})
		return
	}
	if !leaseRE.MatchString(req.Lease) || !workerRE.MatchString(req.Worker) || req.Tokens < 0 {
		reply(permitReply{Error: "invalid permit request"})
		return
	}
	lim, ok := ps.limiters(req.Judge)
	if !ok {
		reply(permitReply{Error: fmt.Sprintf("no judge named %q in this run", req.Judge)})
		return
	}
	wctx, cancel := context.WithTimeout(ctx, permitWait)
	defer cancel()
	release, err := lim.Acquire(wctx, req.Tokens)
	if err != nil {
		reply(permitReply{}) // not yet: ask again
		return
	}
	ps.mu.Lock()
	ps.leases[req.Lease] = &lease{release: release, expires: time.Now().Add(leaseTTL)}
	ps.mu.Unlock()
	reply(permitReply{Granted: true})
}

func (ps *permitServer) end(id string) {
	ps.mu.Lock()
	l := ps.leases[id]
	delete(ps.leases, id)
	ps.mu.Unlock()
	if l != nil {
		l.release()
	}
}

func (ps *permitServer) renew(ids []string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, id := range ids {
		if l := ps.leases[id]; l != nil {
			l.expires = time.Now().Add(leaseTTL)
		}
	}
}

// sweep returns expired leases to the budget.
func (ps *permitServer) sweep(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ps.mu.Lock()
			var expired []*lease
			for id, l := range ps.leases {
				if now.After(l.expires) {
					expired = append(expired, l)
					delete(ps.leases, id)
				}
			}
			ps.mu.Unlock()
			for _, l := range expired {
				l.release()
			}
		}
	}
}

// permitClient is a worker's side: one judge.Limiter per judge, all
// renewing through one loop.
type permitClient struct {
	nc     *nats.Conn
	h      *health // a request that fails is a transport fault
	runID  string
	worker string

	mu   sync.Mutex
	held map[string]bool
}

func newPermitClient(ctx context.Context, c *conn, runID, worker string) *permitClient {
	pc := &permitClient{nc: c.nc, h: c.health, runID: runID, worker: worker, held: map[string]bool{}}
	go pc.renewLoop(ctx)
	return pc
}

func (pc *permitClient) limiter(judgeName string) judge.Limiter {
	return remoteLimiter{pc: pc, judge: judgeName}
}

type remoteLimiter struct {
	pc    *permitClient
	judge string
}

func (rl remoteLimiter) Acquire(ctx context.Context, tokens int) (func(), error) {
	pc := rl.pc
	for {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		id := hex.EncodeToString(b)
		req, _ := json.Marshal(permitRequest{Judge: rl.judge, Tokens: tokens, Lease: id, Worker: pc.worker})
		rctx, cancel := context.WithTimeout(ctx, permitWait+10*time.Second)
		m, err := pc.nc.RequestWithContext(rctx, permitSubject(pc.runID), req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			pc.h.fault("judge permit from the coordinator", err)
			if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
				// The coordinator is away (restarting, or NATS is): wait
				// a moment and ask again; nothing is spent meanwhile.
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Second):
				}
				continue
			}
			return nil, fmt.Errorf("permit from the coordinator: %w", err)
		}
		var rep permitReply
		if err := decodeStrict(m.Data, maxPermitMsg, &rep); err != nil {
			return nil, fmt.Errorf("permit reply: %w", err)
		}
		if rep.Error != "" {
			return nil, fmt.Errorf("permit refused: %s", rep.Error)
		}
		if !rep.Granted {
			continue
		}
		pc.mu.Lock()
		pc.held[id] = true
		pc.mu.Unlock()
		var once sync.Once
		return func() {
			once.Do(func() {
				pc.mu.Lock()
				delete(pc.held, id)
				pc.mu.Unlock()
				b, _ := json.Marshal(leaseList{Leases: []string{id}})
				_ = pc.nc.Publish(releaseSubject(pc.runID), b)
			})
		}, nil
	}
}

func (pc *permitClient) renewLoop(ctx context.Context) {
	t := time.NewTicker(renewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pc.mu.Lock()
			ids := make([]string, 0, len(pc.held))
			for id := range pc.held {
				if len(ids) == maxLeasesHeld {
					break
				}
				ids = append(ids, id)
			}
			pc.mu.Unlock()
			if len(ids) > 0 {
				b, _ := json.Marshal(leaseList{Leases: ids})
				_ = pc.nc.Publish(renewSubject(pc.runID), b)
			}
		}
	}
}

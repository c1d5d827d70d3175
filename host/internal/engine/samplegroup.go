package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/judge"
)

// sampleGroupWindow bounds how long a sample's request waits for the
// other samples' alike requests before it goes out alone: the samples
// run concurrently and usually ask within microseconds of each other, but
// one may be slower (a plugin instance busy, a DAG node still running) or
// ask something else, and no request waits on it for long.
const sampleGroupWindow = 100 * time.Millisecond

// sampleGroup lets the samples: N scorings of one case by one judge that
// supports n share upstream calls: requests the samples make alike (the
// same request, the same judge) are sent once with n choices
// (judge.DoSamples), each sample keeping its own reply and cache entry.
// A request waits until every sample still running has a request waiting
// — then all waiting requests are grouped and sent — or until
// sampleGroupWindow has passed since the first of them. Requests that
// differ between samples (a statement metric's second step depends on its
// first reply) go out as they would without the group.
type sampleGroup struct {
	judge  *judge.Judge
	dry    *dryRun
	window time.Duration

	mu      sync.Mutex
	live    int // samples whose scoring has not returned
	pending []*sampleAsk
	timer   *time.Timer
}

// sampleAsk is one sample's request waiting in the group.
type sampleAsk struct {
	ctx    context.Context
	sample int
	req    abi.JudgeRequest
	key    string
	reply  chan abi.JudgeResponse
}

func newSampleGroup(j *judge.Judge, dry *dryRun, samples int, window time.Duration) *sampleGroup {
	return &sampleGroup{judge: j, dry: dry, live: samples, window: cmp.Or(window, sampleGroupWindow)}
}

// ask submits one sample's requests together and waits for their replies.
func (g *sampleGroup) ask(ctx context.Context, sample int, reqs []abi.JudgeRequest) []abi.JudgeResponse {
	asks := make([]*sampleAsk, len(reqs))
	for i, r := range reqs {
		key, _ := json.Marshal(r) // identity: what the judge is asked
		asks[i] = &sampleAsk{ctx: ctx, sample: sample, req: r, key: string(key), reply: make(chan abi.JudgeResponse, 1)}
	}
	g.mu.Lock()
	if len(g.pending) == 0 {
		g.timer = time.AfterFunc(g.window, g.flush)
	}
	g.pending = append(g.pending, asks...)
	ready := g.allWaitingLocked()
	g.mu.Unlock()
	if ready {
		g.flush()
	}
	out := make([]abi.JudgeResponse, len(reqs))
	for i, a := range asks {
		select {
		case out[i] = <-a.reply:
		case <-ctx.Done():
			out[i] = abi.JudgeResponse{Error: abi.Errorf(abi.CodeJudge, "cancelled while waiting for the judge: %v", ctx.Err())}
		}
	}
	return out
}

// done says a sample's scoring has returned: it will ask nothing more.
func (g *sampleGroup) done() {
	g.mu.Lock()
	g.live--
	ready := len(g.pending) > 0 && g.allWaitingLocked()
	g.mu.Unlock()
	if ready {
		g.flush()
	}
}

// allWaitingLocked: every live sample has a request waiting.
func (g *sampleGroup) allWaitingLocked() bool {
	waiting := map[int]bool{}
	for _, a := range g.pending {
		waiting[a.sample] = true
	}
	return len(waiting) >= g.live
}

// flush sends every waiting request: alike requests of distinct samples
// together, the rest alone.
func (g *sampleGroup) flush() {
	g.mu.Lock()
	pending := g.pending
	g.pending = nil
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	g.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	type bucket struct {
		asks    []*sampleAsk
		samples map[int]bool
	}
	var order []string
	buckets := map[string]*bucket{}
	var alone []*sampleAsk
	for _, a := range pending {
		b := buckets[a.key]
		if b == nil {
			b = &bucket{samples: map[int]bool{}}
			buckets[a.key] = b
			order = append(order, a.key)
		}
		if b.samples[a.sample] {
			alone = append(alone, a) // the same sample asking twice: not a sample of it
			continue
		}
		b.samples[a.sample] = true
		b.asks = append(b.asks, a)
	}
	var wg sync.WaitGroup
	for _, k := range order {
		asks := buckets[k].asks
		// Choice i goes to the i-th sample in sample order, whatever
		// order they arrived in.
		sort.Slice(asks, func(a, b int) bool { return asks[a].sample < asks[b].sample })
		wg.Go(func() {
			samples := make([]int, len(asks))
			for i, a := range asks {
				samples[i] = a.sample
			}
			ctx := asks[0].ctx
			var resps []abi.JudgeResponse
			if g.dry != nil {
				resps = g.dry.respondSamples(ctx, g.judge, asks[0].req, samples)
			} else {
				resps = g.judge.DoSamples(ctx, asks[0].req, samples)
			}
			for i, a := range asks {
				a.reply <- resps[i]
			}
		})
	}
	for _, a := range alone {
		wg.Go(func() {
			if g.dry != nil {
				a.reply <- g.dry.respond(a.ctx, g.judge, a.req, a.sample)
			} else {
				a.reply <- g.judge.DoSample(a.ctx, a.req, a.sample)
			}
		})
	}
	wg.Wait()
}

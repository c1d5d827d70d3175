package judge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentanvil/anvil/host/internal/judge/openaiwire"
	"github.com/agentanvil/anvil/host/internal/stall"
)

// Batch mode: the judge's scoring calls go through the provider's batch
// API instead of one HTTP request each. The batcher sits where the retry
// layer's HTTP attempt would be — under the cache, singleflight, budget and
// breaker, which all still apply (a cached request never goes into a
// batch) — so a guest's judge call blocks until its line of a batch comes
// back. Requests wait in a pending list; it is flushed as one batch when
// it holds MaxRequests or FlushAfter has passed since its first request.
// Each line's custom_id is a digest of its request body (and of how many
// identical bodies were waiting at once: samples of one request are sent
// as distinct lines); the store keeps custom_id → batch id as soon as the
// batch is created, so a run killed while batches are out, resumed, polls
// them instead of paying for the requests twice. A batch's lines are
// delivered when it ends; a line for a request nobody is waiting on yet
// (a resumed run whose case is still queued) is kept until it is asked for.
// Lines a batch ended without (expired, cancelled) and lines the server
// failed with a retryable status are retried — in a new batch, or live
// when RetryLive is set; the rest fail the request as a live call would.
// Calls made outside a batching context (WithBatching: G-Eval's steps and
// other prepare calls) are made live.

// BatchOptions turn batch mode on for a judge.
type BatchOptions struct {
	// State keeps which batch each request went into (the store's
	// key/value namespace). Nil: a killed run cannot find its batches.
	State BatchState
	// MaxRequests flushes the pending requests as a batch once this many
	// wait (default 1000).
	MaxRequests int
	// FlushAfter flushes the pending requests this long after the first
	// of them arrived (default 2 s).
	FlushAfter time.Duration
	// PollEvery is the wait between two reads of a batch's status
	// (default 30 s).
	PollEvery time.Duration
	// RetryLive retries a request a batch ended without live rather than
	// in a new batch.
	RetryLive bool
}

// BatchState is where the judge records its batches: the store.
type BatchState interface {
	Get(ctx context.Context, namespace, key string) ([]byte, bool, error)
	Put(ctx context.Context, namespace, key string, value []byte) error
}

// batchNamespace is the store namespace of custom_id → batch id.
const batchNamespace = "judge_batch"

// WithBatch sends the judge's calls made in a batching context
// (WithBatching) through the provider's batch API.
func WithBatch(o BatchOptions) Option {
	return func(opts *options) { opts.batch = &o }
}

type batchingKey struct{}

// WithBatching marks ctx's judge calls as batchable: a judge in batch mode
// sends them in batches; other calls (a kind's once-per-run prepare work)
// go live, first.
func WithBatching(ctx context.Context) context.Context {
	return context.WithValue(ctx, batchingKey{}, true)
}

func batching(ctx context.Context) bool {
	v, _ := ctx.Value(batchingKey{}).(bool)
	return v
}

// lineResult is one request's outcome in a batch.
type lineResult struct {
	comp completion
	f    *failure
	// again says the batch ended without answering (expired, cancelled,
	// a retryable server error): worth sending again.
	again bool
}

type batchWaiter struct {
	id   string
	body []byte
	need openaiwire.Need
	done chan lineResult
	// sent counts the batches the request went into (owned by the
	// flush and deliver of the batch it is in).
	sent int
	// gone: the caller gave up; a batch submitted for it is recorded but
	// not polled for it.
	gone bool
}

type batcher struct {
	j    *Judge
	wire batchWire
	opts BatchOptions

	mu      sync.Mutex
	pending []*batchWaiter
	timer   *time.Timer
	// waiting are the waiters of each batch out, by custom_id.
	waiting map[string]map[string][]*batchWaiter
	// ready are lines of ended batches nobody has asked for yet.
	ready map[string]lineResult
	// live counts waiters by body digest, to number identical bodies.
	live map[string]int
	// submitting counts the batches being submitted and recorded.
	submitting sync.WaitGroup
	// maxLine overrides the bound of one result line (tests).
	maxLine int
	// left are the batches leftRunning has named.
	left map[string]bool
}

func newBatcher(j *Judge, wire batchWire, o BatchOptions) *batcher {
	if o.MaxRequests <= 0 {
		o.MaxRequests = 1000
	}
	if o.FlushAfter <= 0 {
		o.FlushAfter = 2 * time.Second
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 30 * time.Second
	}
	return &batcher{j: j, wire: wire, opts: o, waiting: map[string]map[string][]*batchWaiter{},
		ready: map[string]lineResult{}, live: map[string]int{}}
}

// stateKey is the store key of custom_id id: the judge's identity first,
// so two judges (or endpoints) never share a batch record.
func (b *batcher) stateKey(id string) string {
	ident := b.j.cfg.Identity()
	return string(ident.Provider) + " " + ident.Endpoint + " " + b.j.cfg.Model + " " + id
}

// do makes one call through a batch: the completion, the attempts it
// counts (1 for a batch line, more when retried live) and a failure.
func (b *batcher) do(ctx context.Context, body []byte, need openaiwire.Need) (completion, int, *failure) {
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:16])
	b.mu.Lock()
	n := b.live[digest]
	b.live[digest] = n + 1
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if b.live[digest]--; b.live[digest] == 0 {
			delete(b.live, digest)
		}
		b.mu.Unlock()
	}()
	w := &batchWaiter{id: digest + "-" + strconv.Itoa(n), body: body, need: need, done: make(chan lineResult, 1)}
	r := b.await(ctx, w)
	sent := max(w.sentCount(b), 1)
	if r.f == nil {
		r.comp.batched = true
		return r.comp, sent, nil
	}
	if !r.again || ctx.Err() != nil || !b.opts.RetryLive {
		return completion{}, sent, r.f
	}
	b.j.log.LogAttrs(ctx, slog.LevelInfo, "judge batch request not answered; sending it again, live",
		slog.String("judge", b.j.cfg.Name), slog.String("custom_id", w.id), slog.String("problem", r.f.detail))
	c, attempts, f := b.j.withRetry(ctx, body, need)
	return c, sent + attempts, f
}

func (w *batchWaiter) sentCount(b *batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return w.sent
}

// await finds w's result: from a batch that ended, from a batch a
// previous run submitted, or by queueing w for the next batch.
func (b *batcher) await(ctx context.Context, w *batchWaiter) lineResult {
	b.mu.Lock()
	if r, ok := b.ready[w.id]; ok {
		delete(b.ready, w.id)
		b.mu.Unlock()
		// Kept as it came: decoded as this caller needs it.
		return b.decode(r, w.need)
	}
	b.mu.Unlock()
	if id := b.submitted(ctx, w.id); id != "" {
		b.j.log.LogAttrs(ctx, slog.LevelDebug, "judge request already in a batch; polling it",
			slog.String("judge", b.j.cfg.Name), slog.String("batch", id), slog.String("custom_id", w.id))
		b.watch(id, []*batchWaiter{w})
	} else {
		b.enqueue(w)
	}
	select {
	case r := <-w.done:
		return r
	case <-ctx.Done():
		b.drop(w)
		return lineResult{f: &failure{kind: failCancelled, detail: "cancelled while waiting for a batch"}}
	}
}

// submitted is the batch a previous submission put custom_id id in.
func (b *batcher) submitted(ctx context.Context, id string) string {
	if b.opts.State == nil {
		return ""
	}
	v, ok, err := b.opts.State.Get(ctx, batchNamespace, b.stateKey(id))
	if err != nil || !ok {
		return ""
	}
	return string(v)
}

func (b *batcher) enqueue(w *batchWaiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, w)
	if len(b.pending) >= b.opts.MaxRequests {
		batch := b.pending
		b.pending = nil
		if b.timer != nil {
			b.timer.Stop()
			b.timer = nil
		}
		b.submitting.Add(1)
		go func() {
			defer b.submitting.Done()
			b.flush(batch)
		}()
		return
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(b.opts.FlushAfter, func() {
			b.mu.Lock()
			batch := b.pending
			b.pending, b.timer = nil, nil
			if len(batch) > 0 {
				b.submitting.Add(1)
			}
			b.mu.Unlock()
			if len(batch) > 0 {
				defer b.submitting.Done()
				b.flush(batch)
			}
		})
	}
}

// drop forgets a waiter whose caller gave up. Its batch, if any, stays out
// and recorded: a resumed run collects it (see leftRunning).
func (b *batcher) drop(w *batchWaiter) {
	b.mu.Lock()
	w.gone = true
	for i, p := range b.pending {
		if p == w {
			b.pending = append(b.pending[:i:i], b.pending[i+1:]...)
			b.mu.Unlock()
			return
		}
	}
	left := ""
	for id, byID := range b.waiting {
		ws := byID[w.id]
		for i, p := range ws {
			if p == w {
				byID[w.id] = append(ws[:i:i], ws[i+1:]...)
				if !anyWaiter(byID) {
					left = id
				}
				break
			}
		}
	}
	b.mu.Unlock()
	if left != "" {
		b.leftRunning(left)
	}
}

func anyWaiter(byID map[string][]*batchWaiter) bool {
	for _, ws := range byID {
		if len(ws) > 0 {
			return true
		}
	}
	return false
}

// leftRunning says that batch id, submitted and recorded, has nobody of
// this run waiting on it (the run stopped, or its callers gave up). It is
// not cancelled: a batch's requests are billed as they complete, and a
// cancelled batch keeps only those, so cancelling saves what the
// unfinished ones would cost but makes a resumed run send them again and
// wait a new completion window for them; `run --resume` collects the
// batch whole from the store's record instead. Whoever will not resume
// cancels it at the provider, by the id logged here.
func (b *batcher) leftRunning(id string) {
	b.mu.Lock()
	if b.left == nil {
		b.left = map[string]bool{}
	}
	seen := b.left[id]
	b.left[id] = true
	b.mu.Unlock()
	if seen {
		return
	}
	b.j.log.Warn("judge batch left running at the provider: no call of this run waits on it now; "+
		"its requests are billed as they complete, and run --resume collects them; cancel it at the provider if you will not resume",
		"judge", b.j.cfg.Name, "provider", string(b.j.cfg.Provider), "batch", id)
}

// WaitSubmitted waits until the batches being submitted are created and
// recorded in the batch state (or have failed): before the store closes.
func (j *Judge) WaitSubmitted() {
	if j.batcher != nil {
		j.batcher.submitting.Wait()
	}
}

// flush submits ws as one batch, records it and starts polling it.
func (b *batcher) flush(ws []*batchWaiter) {
	ctx := context.Background()
	reqs := make([]batchRequest, 0, len(ws))
	seen := map[string]bool{}
	for _, w := range ws {
		if seen[w.id] {
			continue // the same waiter cannot be queued twice; an id is one request
		}
		seen[w.id] = true
		reqs = append(reqs, batchRequest{customID: w.id, body: w.body})
	}
	gctx, stop := stall.WithGuard(ctx, b.j.cfg.Timeout.Std())
	id, httpResp, err := b.wire.submit(gctx, reqs)
	if err != nil {
		f := b.j.classify(gctx, httpResp, err)
		stop()
		f.detail = b.failureDetail(err, f)
		b.fail(ws, f)
		return
	}
	stop()
	if b.opts.State != nil {
		for _, w := range ws {
			if err := b.opts.State.Put(ctx, batchNamespace, b.stateKey(w.id), []byte(id)); err != nil {
				b.j.log.Warn("judge batch: cannot record the batch in the store; a killed run would submit its requests again",
					"judge", b.j.cfg.Name, "batch", id, "error", err)
				break
			}
		}
	}
	b.mu.Lock()
	for _, w := range ws {
		w.sent++
	}
	b.mu.Unlock()
	b.j.log.Info("judge batch submitted", "judge", b.j.cfg.Name, "batch", id, "requests", len(reqs))
	b.watch(id, ws)
}

func (b *batcher) fail(ws []*batchWaiter, f *failure) {
	for _, w := range ws {
		w.done <- lineResult{f: f}
	}
}

// watch adds ws to batch id's waiters, starting its poller if it has none.
func (b *batcher) watch(id string, ws []*batchWaiter) {
	b.mu.Lock()
	byID, polling := b.waiting[id]
	if !polling {
		byID = map[string][]*batchWaiter{}
		b.waiting[id] = byID
	}
	for _, w := range ws {
		if !w.gone {
			byID[w.id] = append(byID[w.id], w)
		}
	}
	nobody := !polling && !anyWaiter(byID)
	if nobody {
		delete(b.waiting, id)
	}
	b.mu.Unlock()
	switch {
	case nobody:
		// Every caller gave up while it was being submitted.
		b.leftRunning(id)
	case !polling:
		go b.poll(id)
	}
}

// waiters says whether anyone still waits on batch id.
func (b *batcher) waiters(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if anyWaiter(b.waiting[id]) {
		return true
	}
	delete(b.waiting, id)
	return false
}

// poll reads batch id's status until it ends, then delivers its lines. It
// stops early when nobody waits on it any more (the run stopped): the
// batch is recorded, and a resumed run polls it again. When its status
// cannot be read (max_retries failures in a row), its calls fail, and a
// retryable failure is not sent in a new batch: the batch still runs and
// bills its lines, and `--resume` polls it again.
func (b *batcher) poll(id string) {
	ctx := context.Background()
	failures := 0
	for {
		if !b.waiters(id) {
			return
		}
		gctx, stop := stall.WithGuard(ctx, b.j.cfg.Timeout.Std())
		st, httpResp, err := b.wire.status(gctx, id)
		var f *failure
		if err != nil {
			f = b.j.classify(gctx, httpResp, err)
		}
		stop()
		if err != nil {
			failures++
			if !f.retryable() || failures > b.j.cfg.MaxRetries {
				f.detail = b.failureDetail(err, f)
				if f.retryable() {
					f.detail += "; run --resume polls the batch again"
				}
				b.deliver(id, lineResult{f: f}, nil)
				return
			}
		} else if st.ended {
			b.collect(ctx, id, st)
			return
		} else {
			failures = 0
		}
		if b.j.clock.Sleep(ctx, b.opts.PollEvery) != nil {
			return
		}
	}
}

// collect reads an ended batch's results and delivers each line as it is
// read (results are not held whole: a batch's output can be far larger
// than any one reply), then fails or resends what no line answered. A
// read that fails (the connection, the server) is made again, up to
// max_retries times, skipping the lines already delivered; one that still
// fails fails the calls left, retryable — so `--resume` evaluates their
// cases again, reading the recorded batch's results — but not sent in a
// new batch: its lines are done and billed, and sending them again would
// pay for them twice.
func (b *batcher) collect(ctx context.Context, id string, st batchStatus) {
	var again []*batchWaiter
	seen := map[string]bool{}
	var found resultsRead
	var httpResp *http.Response
	var err error
	var f *failure
	for attempt := 0; ; attempt++ {
		gctx, stop := stall.WithGuard(ctx, b.j.cfg.Timeout.Std())
		found, httpResp, err = b.wire.results(gctx, id, st, b.lineLimit(), func(cid string, r lineResult) {
			if seen[cid] {
				return
			}
			seen[cid] = true
			again = append(again, b.deliverLine(id, cid, r)...)
		})
		f = nil
		if err != nil {
			f = b.j.classify(gctx, httpResp, err)
		}
		stop()
		var bad *badResults
		if err == nil || errors.As(err, &bad) || attempt >= b.j.cfg.MaxRetries || !f.retryable() {
			break
		}
		b.j.log.Warn("judge batch: reading its results failed; reading them again",
			"judge", b.j.cfg.Name, "batch", id, "lines_read", len(seen), "error", b.j.words(err.Error()))
		if b.j.clock.Sleep(ctx, b.opts.PollEvery) != nil {
			break
		}
	}
	if found.bad > 0 {
		b.j.log.Warn("judge batch: result lines that are not ones; their requests are sent again",
			"judge", b.j.cfg.Name, "batch", id, "lines", found.bad)
	}
	missing := lineResult{f: &failure{kind: failServer, detail: fmt.Sprintf("batch %s ended %s without answering the request", id, st.status)}, again: true}
	if st.failed != "" {
		// The provider would not run the batch (its input, or its size
		// against the organisation's batch queue limit): the same
		// requests sent again at once fail the same way.
		missing.f = &failure{kind: failRejected, detail: fmt.Sprintf("batch %s failed: %s", id, b.j.words(st.failed))}
		missing.again = false
		if strings.Contains(st.failed, "token_limit_exceeded") {
			missing.f.detail += "; a provider bounds the tokens of the batches it holds queued at once (its batch queue limit, not requests or tokens per minute): lower --concurrency, which bounds a batch's requests"
		}
	}
	if len(found.over) > 0 {
		lr := &lineReader{batch: id, limit: b.lineLimit(), found: found}
		missing = lineResult{f: lr.overFailure(st.status)}
		b.j.log.Error("judge batch: result lines over the line bound refused; their requests fail",
			"judge", b.j.cfg.Name, "batch", id, "lines", found.over, "bound_bytes", b.lineLimit())
	}
	if err != nil {
		var bad *badResults
		if errors.As(err, &bad) {
			f = &failure{kind: failUnparseable, detail: "refused"}
		}
		f.detail = b.failureDetail(err, f)
		if f.retryable() {
			f.detail += "; run --resume reads the batch's results again"
		}
		missing = lineResult{f: f}
	}
	b.deliver(id, missing, again)
}

// lineLimit bounds one result line: the bound of one live reply.
func (b *batcher) lineLimit() int {
	if b.maxLine > 0 {
		return b.maxLine
	}
	return maxReplyBytes
}

// deliverLine hands one result line of batch id to the waiters on its
// custom_id, or keeps it for whoever asks for it later; it returns the
// waiters to send again.
func (b *batcher) deliverLine(id, cid string, r lineResult) (again []*batchWaiter) {
	b.mu.Lock()
	ws := b.waiting[id][cid]
	delete(b.waiting[id], cid)
	if len(ws) == 0 {
		b.ready[cid] = r
	}
	b.mu.Unlock()
	for _, w := range ws {
		if b.resend(w, r) {
			b.j.log.Info("judge batch request not answered; sending it again in a new batch",
				"judge", b.j.cfg.Name, "batch", id, "custom_id", cid, "problem", r.f.detail)
			again = append(again, w)
			continue
		}
		w.done <- b.decode(r, w.need)
	}
	return again
}

// resend says whether w, answered r, goes into a new batch: a retryable
// failure, not to be retried live, within max_retries+1 batches (as a
// live call makes at most max_retries+1 attempts).
func (b *batcher) resend(w *batchWaiter, r lineResult) bool {
	return r.again && !b.opts.RetryLive && w.sentCount(b) <= b.j.cfg.MaxRetries
}

// statusFailure is a batch line's failure with HTTP status status, of the
// kind a live reply with that status is; again says it is worth sending
// again.
func statusFailure(status int, detail string) lineResult {
	f := &failure{status: status, detail: detail}
	switch {
	case status == http.StatusTooManyRequests:
		f.kind = failRateLimited
	case status >= 500 || status == http.StatusRequestTimeout:
		f.kind = failServer
	default:
		f.kind = failRejected
	}
	return lineResult{f: f, again: f.retryable()}
}

// deliver ends batch id: each waiter still on it gets the line that
// arrived before it did (kept in ready: a resumed run's request joining
// the batch while its results were read), else missing (sent again when
// missing.again). again are waiters already found worth sending again; they
// go, with the rest, into one new batch.
func (b *batcher) deliver(id string, missing lineResult, again []*batchWaiter) {
	b.mu.Lock()
	byID := b.waiting[id]
	delete(b.waiting, id)
	type pair struct {
		r  lineResult
		ws []*batchWaiter
	}
	var todo []pair
	for cid, ws := range byID {
		if len(ws) == 0 {
			continue
		}
		r, ok := b.ready[cid]
		delete(b.ready, cid)
		if !ok {
			r = missing
		}
		todo = append(todo, pair{r, ws})
	}
	b.mu.Unlock()
	for _, p := range todo {
		for _, w := range p.ws {
			if b.resend(w, p.r) {
				b.j.log.Info("judge batch request not answered; sending it again in a new batch",
					"judge", b.j.cfg.Name, "batch", id, "custom_id", w.id, "problem", p.r.f.detail)
				again = append(again, w)
				continue
			}
			w.done <- b.decode(p.r, w.need)
		}
	}
	if len(again) > 0 {
		b.submitting.Add(1)
		go func() {
			defer b.submitting.Done()
			b.flush(again)
		}()
	}
}

// decode decodes a delivered line's completion as its waiter needs it.
func (b *batcher) decode(r lineResult, need openaiwire.Need) lineResult {
	if r.f != nil {
		return r
	}
	if len(r.comp.raw) == 0 {
		// A 2xx line without a body is no reply.
		return lineResult{f: &failure{kind: failUnparseable, status: http.StatusOK, detail: "a batch result line with status 2xx and no body"}}
	}
	c, f := b.wire.decodeLine(r.comp.raw, need)
	if f != nil {
		f.detail = b.j.words(f.detail)
		return lineResult{f: f}
	}
	return lineResult{comp: c}
}

// failureDetail is what a failed batch call says: its error, then the
// failure's own words where the error does not already hold them (a
// stall's do).
func (b *batcher) failureDetail(err error, f *failure) string {
	d := err.Error()
	if f.kind == failStalled {
		// The SDKs report the stall's cancellation as the context's.
		d = strings.Replace(d, context.Canceled.Error(), f.detail, 1)
	}
	if f.detail != "" && !strings.Contains(d, f.detail) {
		d += ": " + f.detail
	}
	return b.j.words(d)
}

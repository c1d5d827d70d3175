package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/results"
)

// dispatch is the state of one Dispatch, owned by its loop.
type dispatch struct {
	co *Coordinator
	// expected: published cases awaiting a result, with the hash of the
	// case as published (a result must carry the same case).
	expected map[string]*caseRef
	// early: results read back from the stream before their case came
	// through (a resumed run finds results an earlier coordinator did not
	// write).
	early map[string]*results.CaseResult
	// exhausted: cases JetStream gave up delivering before their case
	// came through (a resumed run reads the advisories again).
	exhausted map[string]exhaustion
	// written: cases emitted by this dispatch or done before a resume.
	written map[string]bool
	// retried: the cases results.jsonl held with a retryable error
	// (results.RetryOnResume) when this run was resumed: evaluated again.
	retried map[string]bool
	// requeued counts each case's publications after a refused result:
	// at most maxRequeue, however many results are refused — a peer's
	// messages cannot buy evaluations (and judge spend) by the case.
	requeued map[string]int
	attempts int
	emit     func(*results.CaseResult) error
	// cases is the cases stream, once looked up (queued).
	cases jetstream.Stream
	// lastProgress is when a case was last written, lastNotice when the
	// watchdog last said none was.
	lastProgress, lastNotice time.Time
}

type caseRef struct {
	hash [32]byte
	// seqs are the stream sequences of this dispatch's publications of
	// the case: for a case retried by --resume, an advisory about any
	// other message of it is about an earlier, already written attempt.
	seqs []uint64
}

type exhaustion struct {
	hash [32]byte
	why  string
}

// Dispatch publishes the run and its cases and emits each result once,
// implementing engine.Dispatcher.
func (co *Coordinator) Dispatch(ctx context.Context, resumed engine.Resumed, cases <-chan *abi.TestCase, emit func(*results.CaseResult) error) error {
	if co.eng == nil {
		return errors.New("cluster: coordinator not bound to an engine")
	}
	// Faults first: a worker may refuse the run the moment it is published.
	faults := make(chan *nats.Msg, 64)
	sub, err := co.c.nc.ChanSubscribe(faultsSubject(co.runID), faults)
	if err != nil {
		return fmt.Errorf("cluster: subscribe to faults: %w", err)
	}
	defer sub.Unsubscribe()
	if err := co.c.nc.Flush(); err != nil {
		return fmt.Errorf("cluster: subscribe to faults: %w", err)
	}
	// Which worker took which case: named when a case exhausts its
	// deliveries. Best effort (core NATS): a notice lost changes only the
	// name in that message.
	taken, err := co.c.nc.Subscribe(deliveriesSubject(co.runID), co.onDelivery)
	if err != nil {
		return fmt.Errorf("cluster: subscribe to deliveries: %w", err)
	}
	defer taken.Unsubscribe()
	ps := &permitServer{log: co.log, limiters: co.limiter}
	stopPermits, err := ps.serve(ctx, co.c.nc, co.runID)
	if err != nil {
		return fmt.Errorf("cluster: serve judge permits: %w", err)
	}
	defer stopPermits()
	if err := co.publishRun(ctx); err != nil {
		return err
	}
	d := &dispatch{co: co, expected: map[string]*caseRef{}, early: map[string]*results.CaseResult{},
		exhausted: map[string]exhaustion{}, written: resumed.Written, retried: resumed.Retried, requeued: map[string]int{}, emit: emit,
		lastProgress: co.now()}
	results := make(chan jetstream.Msg, 1024)
	finished := make(chan struct{})
	cons, err := co.c.js.OrderedConsumer(ctx, resultsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{resultsSubject(co.runID)}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("cluster: read results: %w", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case results <- m:
		case <-finished:
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: read results: %w", err)
	}
	defer cc.Stop()
	exhausted := make(chan jetstream.Msg, 64)
	acons, err := co.c.js.OrderedConsumer(ctx, exhaustedStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{exhaustedSubject(co.runID)}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("cluster: read max-deliveries advisories: %w", err)
	}
	ac, err := acons.Consume(func(m jetstream.Msg) {
		select {
		case exhausted <- m:
		case <-finished:
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: read max-deliveries advisories: %w", err)
	}
	defer ac.Stop()
	defer close(finished) // first: a callback blocked on a channel returns
	ticks := co.opts.ticks
	if ticks == nil {
		t := time.NewTicker(co.opts.StallAfter / 4)
		defer t.Stop()
		ticks = t.C
	}
	in := cases
	for in != nil || len(d.expected) > 0 {
		select {
		case <-ticks:
			d.watch(ctx)
		case c, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			if err := d.onCase(ctx, c); err != nil {
				return err
			}
		case m := <-results:
			if err := d.onResult(ctx, m.Data()); err != nil {
				return err
			}
			if co.opts.resultHandled != nil {
				co.opts.resultHandled()
			}
		case m := <-exhausted:
			if err := d.onExhausted(ctx, m.Data()); err != nil {
				return err
			}
		case m := <-faults:
			if err := d.onFault(m.Data); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// onCase publishes a case, unless a resumed run finds its result (or its
// exhaustion) already in NATS. A case --resume retries — results.jsonl
// held it with a retryable error — is published afresh, and what NATS
// kept of its earlier attempt is ignored.
func (d *dispatch) onCase(ctx context.Context, c *abi.TestCase) error {
	h, data, err := caseHash(d.co.runID, c)
	if err != nil {
		return err
	}
	retried := d.retried[c.ID]
	if r, ok := d.early[c.ID]; ok {
		delete(d.early, c.ID)
		if rh, _, err := caseHash(d.co.runID, r.Case); err == nil && rh == h && !retried {
			return d.write(r)
		}
	}
	if x, ok := d.exhausted[c.ID]; ok {
		delete(d.exhausted, c.ID)
		if x.hash == h && !retried {
			return d.write(d.co.lost(c, x.why))
		}
	}
	ref := &caseRef{hash: h}
	d.expected[c.ID] = ref
	suffix := ""
	if retried {
		suffix = "#r" + d.co.desc.Generation
	}
	return d.publishCase(ctx, ref, c.ID, data, suffix)
}

// publishCase puts a case on the work queue under its message id (plus
// suffix, for a publication that must not be taken for an earlier one)
// and records the message's sequence in ref.
func (d *dispatch) publishCase(ctx context.Context, ref *caseRef, id string, data []byte, suffix string) error {
	if max := d.co.c.nc.MaxPayload(); int64(len(data)) > max {
		return fmt.Errorf("cluster: case %q is %d bytes as a message, over the NATS server's max_payload of %d (raise max_payload in the server config)", id, len(data), max)
	}
	mid := msgID("c", d.co.runID, id) + suffix
	ack, err := d.publish(ctx, id, data, mid)
	if err != nil {
		return err
	}
	if ack.Duplicate && !d.queued(ctx, ack.Sequence) {
		// JetStream remembers a message id for its duplicate window
		// after the message is gone — acknowledged, or purged with an
		// earlier run of this name: published under it, the case would
		// never be delivered.
		if ack, err = d.publish(ctx, id, data, mid+"#g"+d.co.desc.Generation); err != nil {
			return err
		}
	}
	ref.seqs = append(ref.seqs, ack.Sequence)
	return nil
}

func (d *dispatch) publish(ctx context.Context, id string, data []byte, mid string) (*jetstream.PubAck, error) {
	msg := &nats.Msg{Subject: casesSubject(d.co.runID), Data: data}
	var ack *jetstream.PubAck
	err := d.co.c.retry(ctx, "publish case "+strconvQuote(id), func() error {
		var err error
		ack, err = d.co.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(mid))
		return err
	})
	return ack, err
}

// queued reports whether the cases stream still holds this run's message
// at seq (pending, in flight or exhausted). When it cannot tell, it says
// no: a case published twice is written once, a case never delivered is
// waited for forever.
func (d *dispatch) queued(ctx context.Context, seq uint64) bool {
	if d.cases == nil {
		s, err := d.co.c.js.Stream(ctx, casesStream)
		if err != nil {
			return false
		}
		d.cases = s
	}
	raw, err := d.cases.GetMsg(ctx, seq)
	return err == nil && raw.Subject == casesSubject(d.co.runID)
}

func (d *dispatch) onResult(ctx context.Context, data []byte) error {
	var rm ResultMessage
	if err := decodeStrict(data, maxResult, &rm); err != nil {
		d.co.log.Warn("cluster: dropped a result message that does not decode", "err", err)
		return nil
	}
	r := rm.Result
	if r == nil || r.Case == nil {
		d.co.log.Warn("cluster: dropped a result message without a result", "worker", rm.Worker)
		return nil
	}
	d.co.mu.Lock()
	d.co.sawWorker(rm.Worker)
	d.co.mu.Unlock()
	id := r.CaseID
	if d.written[id] {
		return nil // a redelivered case evaluated twice: written once
	}
	if rm.RunID != d.co.runID {
		// Never this run's evaluation, so never a reason to evaluate this
		// run's case again.
		d.co.log.Debug("cluster: dropped a result of another run", "run", rm.RunID, "worker", rm.Worker)
		return nil
	}
	if d.retried[id] && rm.Generation != d.co.desc.Generation {
		return nil // an earlier attempt at a case --resume retries
	}
	if err := d.co.checkResult(&rm); err != nil {
		return d.refused(ctx, id, rm.Worker, err.Error(), r)
	}
	r.Worker = rm.Worker // checked above to be a worker name
	ref, ok := d.expected[id]
	if !ok {
		if d.co.resume {
			d.early[id] = r
		} else {
			d.co.log.Warn("cluster: dropped a result for a case this run did not publish", "worker", rm.Worker, "case", id)
		}
		return nil
	}
	if h, _, err := caseHash(d.co.runID, r.Case); err != nil || h != ref.hash {
		return d.refused(ctx, id, rm.Worker, fmt.Sprintf("case %q: the result carries another case than the one published", id), nil)
	}
	return d.write(r)
}

// maxRequeue bounds the publications of one case after refused results:
// the cases' delivery limit, enough for the case to reach a matching
// worker past a few that do not match.
func (d *dispatch) maxRequeue() int { return d.co.opts.MaxDeliver }

// refused handles a result this run does not accept: it is reported, and
// the case is published again for a matching worker — at most
// maxRequeue times per case (a case pending meanwhile still takes a
// matching worker's result). r is the refused result, when it carries the
// case unchanged.
func (d *dispatch) refused(ctx context.Context, id, worker, reason string, r *results.CaseResult) error {
	ref, pending := d.expected[id]
	if !pending {
		// Not a case this run waits for (yet): nothing to evaluate again.
		d.co.log.Debug("cluster: refused a result", "worker", worker, "case", id, "reason", reason)
		return nil
	}
	n := d.requeued[id]
	if n >= d.maxRequeue() {
		if n == d.maxRequeue() {
			d.requeued[id]++ // said once
			d.co.log.Warn("cluster: results refused for a case again; it is not published again (a matching worker's result is still taken)",
				"case", id, "republished", n, "worker", worker, "reason", reason)
		}
		return nil
	}
	d.co.refuse(FaultMessage{RunID: d.co.runID, Worker: worker, Kind: FaultRefused, Reason: reason})
	if r == nil || r.Case == nil {
		return nil // the case stays pending; the run waits for its redelivery
	}
	h, data, err := caseHash(d.co.runID, r.Case)
	if err != nil || h != ref.hash {
		return nil
	}
	d.requeued[id] = n + 1
	d.attempts++
	return d.publishCase(ctx, ref, id, data, fmt.Sprintf("#%s.%d", d.co.desc.Generation, d.attempts))
}

func (d *dispatch) write(r *results.CaseResult) error {
	delete(d.expected, r.CaseID)
	d.written[r.CaseID] = true
	d.lastProgress = d.co.now()
	d.co.mu.Lock()
	delete(d.co.lastTaken, r.CaseID)
	d.co.mu.Unlock()
	return d.emit(r)
}

// onExhausted handles JetStream's advisory that a case reached the
// consumer's MaxDeliver without an ack: every worker it was given to died
// or went silent on it. The case is written as an error result naming the
// case, its deliveries and the last worker seen with it, so the gate fails
// closed (max_error_rate) instead of the run waiting forever. The case is
// read back from the stream by the advisory's sequence and must be one
// this run published, unchanged.
func (d *dispatch) onExhausted(ctx context.Context, data []byte) error {
	var a exhaustedAdvisory
	if len(data) > maxAdvisory {
		d.co.log.Warn("cluster: dropped a max-deliveries advisory over the size limit", "bytes", len(data))
		return nil
	}
	if err := json.Unmarshal(data, &a); err != nil || a.Stream != casesStream || a.Consumer != casesConsumer(d.co.runID) || a.StreamSeq == 0 {
		d.co.log.Warn("cluster: dropped a max-deliveries advisory that is not this run's", "err", err, "stream", a.Stream, "consumer", a.Consumer)
		return nil
	}
	var raw *jetstream.RawStreamMsg
	err := d.co.c.retry(ctx, fmt.Sprintf("read case at %s sequence %d", casesStream, a.StreamSeq), func() error {
		s, err := d.co.c.js.Stream(ctx, casesStream)
		if err == nil {
			raw, err = s.GetMsg(ctx, a.StreamSeq)
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil // acked meanwhile (its result is on the way) or purged
		}
		return err
	})
	if err != nil {
		return err
	}
	if raw == nil || raw.Subject != casesSubject(d.co.runID) {
		return nil
	}
	var cm CaseMessage
	if err := decodeStrict(raw.Data, maxCaseMessage, &cm); err != nil {
		return nil // a case message no worker could decode was terminated, not exhausted
	}
	if err := cm.validate(d.co.runID); err != nil {
		return nil
	}
	id := cm.Case.ID
	if d.written[id] {
		return nil
	}
	h, _, err := caseHash(d.co.runID, cm.Case)
	if err != nil {
		return err
	}
	why := fmt.Sprintf("case %q: delivered %d times, no worker finished it (%s); each died or went silent for --ack-wait %s (raise --max-deliver or --ack-wait if the case is only slow)",
		id, a.Deliveries, d.co.lastSeen(id), d.co.opts.AckWait)
	ref, ok := d.expected[id]
	if !ok {
		if d.co.resume && !d.retried[id] {
			d.exhausted[id] = exhaustion{hash: h, why: why}
		}
		return nil
	}
	if ref.hash != h {
		d.co.log.Warn("cluster: a max-deliveries advisory for a case whose content is not the one published; ignored", "case", id)
		return nil
	}
	if d.retried[id] && !slices.Contains(ref.seqs, a.StreamSeq) {
		return nil // an earlier attempt, already written; this one goes on
	}
	d.co.log.Error("cluster: case exhausted its deliveries; written as an error (retryable: --resume evaluates it again)", "case", id, "deliveries", a.Deliveries, "last_worker", d.co.lastSeen(id))
	return d.write(d.co.lost(cm.Case, why))
}

// lost is the result of a case no worker finished: an error on each
// metric, marked retryable — workers lost or stalled are the
// infrastructure's fault, and --resume evaluates the case again (a case
// that kills every worker is written so again, after as many deliveries).
func (co *Coordinator) lost(c *abi.TestCase, why string) *results.CaseResult {
	r := co.eng.Unevaluated(c, why)
	for i := range r.Metrics {
		if e := r.Metrics[i].Error; e != nil {
			e.Retryable = true
		}
	}
	return r
}

// onDelivery records which worker took a case.
func (co *Coordinator) onDelivery(m *nats.Msg) {
	var dm DeliveryMessage
	if err := decodeStrict(m.Data, maxDelivery, &dm); err != nil {
		co.log.Debug("cluster: dropped a delivery notice that does not decode", "err", err)
		return
	}
	if err := dm.validate(co.runID); err != nil {
		co.log.Debug("cluster: dropped a delivery notice", "err", err)
		return
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	co.sawWorker(dm.Worker)
	if prev, ok := co.lastTaken[dm.CaseID]; !ok || dm.Delivery >= prev.delivery {
		co.lastTaken[dm.CaseID] = takenBy{worker: dm.Worker, delivery: dm.Delivery}
	}
}

// lastSeen names the last worker a case was delivered to.
func (co *Coordinator) lastSeen(caseID string) string {
	co.mu.Lock()
	defer co.mu.Unlock()
	t, ok := co.lastTaken[caseID]
	if !ok {
		return "no worker reported taking it to this coordinator"
	}
	return fmt.Sprintf("last worker seen: %s, delivery %d", t.worker, t.delivery)
}

func (d *dispatch) onFault(data []byte) error {
	var f FaultMessage
	if err := decodeStrict(data, maxFault, &f); err != nil {
		d.co.log.Warn("cluster: dropped a fault message that does not decode", "err", err)
		return nil
	}
	if err := f.validate(d.co.runID); err != nil {
		d.co.log.Warn("cluster: dropped a fault message", "err", err)
		return nil
	}
	d.co.refuse(f)
	if f.Kind == FaultJudgeDown {
		return fmt.Errorf("worker %s: %s", f.Worker, f.Reason)
	}
	return nil
}

func (co *Coordinator) refuse(f FaultMessage) {
	co.log.Warn("cluster: worker refused", "worker", f.Worker, "kind", f.Kind, "reason", f.Reason)
	co.mu.Lock()
	co.sawWorker(f.Worker)
	if len(co.refusals) < maxRefusals {
		co.refusals = append(co.refusals, f)
	}
	co.lastRefusal = f
	co.mu.Unlock()
	if co.opts.OnFault != nil {
		co.opts.OnFault(f)
	}
}

// checkResult checks a worker's stamp and its result against this run.
func (co *Coordinator) checkResult(rm *ResultMessage) error {
	switch {
	case rm.RunID != co.runID:
		return fmt.Errorf("result of run %q on run %q's subject", rm.RunID, co.runID)
	case !workerRE.MatchString(rm.Worker):
		return fmt.Errorf("result from worker %q: not a worker name", rm.Worker)
	case rm.ABIMajor != abi.Major || rm.ABIMinor != abi.Minor:
		return fmt.Errorf("worker %s speaks ABI %d.%d, this run %d.%d", rm.Worker, rm.ABIMajor, rm.ABIMinor, abi.Major, abi.Minor)
	case !slices.Equal(rm.Kinds, co.desc.Identity.Kinds):
		return fmt.Errorf("worker %s links built-in kinds of other source: %s", rm.Worker,
			strings.Join(identity.Diff(identity.New(nil, co.desc.Identity.Kinds), identity.New(nil, rm.Kinds), "run", "worker"), "; "))
	case !mapsEqual(rm.Plugins, co.desc.Plugins):
		return fmt.Errorf("worker %s loaded plugins %v, this run pins %v", rm.Worker, rm.Plugins, co.desc.Plugins)
	}
	if err := co.eng.CheckResult(rm.Result); err != nil {
		return fmt.Errorf("worker %s: %w", rm.Worker, err)
	}
	return nil
}

// caseHash is the hash of a case as published, and the message itself.
func caseHash(runID string, c *abi.TestCase) ([32]byte, []byte, error) {
	data, err := json.Marshal(CaseMessage{RunID: runID, Case: c})
	if err != nil {
		return [32]byte{}, nil, fmt.Errorf("cluster: encode case %q: %w", c.ID, err)
	}
	return sha256.Sum256(data), data, nil
}

// msgID is a Nats-Msg-Id for JetStream's de-duplication: kind, run and a
// hash of the case id (which may be any text).
func msgID(kind, runID, caseID string) string {
	h := sha256.Sum256([]byte(caseID))
	return kind + "." + runID + "." + hex.EncodeToString(h[:12])
}

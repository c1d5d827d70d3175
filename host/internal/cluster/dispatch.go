package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
)

// dispatch is the state of one Dispatch, owned by its loop.
type dispatch struct {
	co *Coordinator
	// expected: published cases awaiting a result, with the hash of the
	// case as published (a result must carry the same case).
	expected map[string]caseRef
	// early: results read back from the stream before their case came
	// through (a resumed run finds results an earlier coordinator did not
	// write).
	early map[string]*engine.CaseResult
	// exhausted: cases JetStream gave up delivering before their case
	// came through (a resumed run reads the advisories again).
	exhausted map[string]exhaustion
	// written: cases emitted by this dispatch or done before a resume.
	written  map[string]bool
	attempts int
	emit     func(*engine.CaseResult) error
}

type caseRef struct {
	hash [32]byte
}

type exhaustion struct {
	hash [32]byte
	why  string
}

// Dispatch publishes the run and its cases and emits each result once,
// implementing engine.Dispatcher.
func (co *Coordinator) Dispatch(ctx context.Context, cases <-chan *abi.TestCase, emit func(*engine.CaseResult) error) error {
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
	d := &dispatch{co: co, expected: map[string]caseRef{}, early: map[string]*engine.CaseResult{},
		exhausted: map[string]exhaustion{}, written: map[string]bool{}, emit: emit}
	if co.resume {
		if err := d.readWritten(); err != nil {
			return err
		}
	}
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
	in := cases
	for in != nil || len(d.expected) > 0 {
		select {
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

// readWritten reads the ids results.jsonl already holds (a resume). A torn
// last line ends the list: the engine drops it and evaluates that case
// again.
func (d *dispatch) readWritten() error {
	path := filepath.Join(d.co.outputDir, "results.jsonl")
	err := engine.EachResult(path, func(r *engine.CaseResult) error {
		d.written[r.CaseID] = true
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		d.co.log.Debug("resume: results.jsonl ends in a torn line", "err", err)
	}
	return nil
}

func (d *dispatch) onCase(ctx context.Context, c *abi.TestCase) error {
	h, data, err := caseHash(d.co.runID, c)
	if err != nil {
		return err
	}
	if r, ok := d.early[c.ID]; ok {
		delete(d.early, c.ID)
		if rh, _, err := caseHash(d.co.runID, r.Case); err == nil && rh == h {
			return d.write(r)
		}
	}
	if x, ok := d.exhausted[c.ID]; ok {
		delete(d.exhausted, c.ID)
		if x.hash == h {
			return d.write(d.co.eng.Unevaluated(c, x.why))
		}
	}
	d.expected[c.ID] = caseRef{hash: h}
	return d.publishCase(ctx, c.ID, data, "")
}

func (d *dispatch) publishCase(ctx context.Context, id string, data []byte, suffix string) error {
	if max := d.co.c.nc.MaxPayload(); int64(len(data)) > max {
		return fmt.Errorf("cluster: case %q is %d bytes as a message, over the NATS server's max_payload of %d (raise max_payload in the server config)", id, len(data), max)
	}
	msg := &nats.Msg{Subject: casesSubject(d.co.runID), Data: data}
	return retryNATS(ctx, d.co.log, "publish case "+strconvQuote(id), func() error {
		_, err := d.co.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID("c", d.co.runID, id)+suffix))
		return err
	})
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
	id := r.CaseID
	if d.written[id] {
		return nil // a redelivered case evaluated twice: written once
	}
	if err := d.co.checkResult(&rm); err != nil {
		d.co.refuse(FaultMessage{RunID: d.co.runID, Worker: rm.Worker, Kind: FaultRefused, Reason: err.Error()})
		return d.retry(ctx, r)
	}
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
		d.co.refuse(FaultMessage{RunID: d.co.runID, Worker: rm.Worker, Kind: FaultRefused,
			Reason: fmt.Sprintf("case %q: the result carries another case than the one published", id)})
		return d.retry(ctx, nil)
	}
	return d.write(r)
}

func (d *dispatch) write(r *engine.CaseResult) error {
	delete(d.expected, r.CaseID)
	d.written[r.CaseID] = true
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
	err := retryNATS(ctx, d.co.log, fmt.Sprintf("read case at %s sequence %d", casesStream, a.StreamSeq), func() error {
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
		if d.co.resume {
			d.exhausted[id] = exhaustion{hash: h, why: why}
		}
		return nil
	}
	if ref.hash != h {
		d.co.log.Warn("cluster: a max-deliveries advisory for a case whose content is not the one published; ignored", "case", id)
		return nil
	}
	d.co.log.Error("cluster: case exhausted its deliveries; written as an error", "case", id, "deliveries", a.Deliveries, "last_worker", d.co.lastSeen(id))
	return d.write(d.co.eng.Unevaluated(cm.Case, why))
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

// retry publishes a case again after its result was refused, so a worker
// that matches the run evaluates it. Only a case whose content is known
// (the refused result carries it, unchanged) can be; otherwise the case
// stays pending and the run waits for its redelivery.
func (d *dispatch) retry(ctx context.Context, r *engine.CaseResult) error {
	if r == nil || r.Case == nil {
		return nil
	}
	ref, ok := d.expected[r.CaseID]
	if !ok {
		return nil
	}
	h, data, err := caseHash(d.co.runID, r.Case)
	if err != nil || h != ref.hash {
		return nil
	}
	d.attempts++
	return d.publishCase(ctx, r.CaseID, data, fmt.Sprintf("#%d", d.attempts))
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
	co.refusals = append(co.refusals, f)
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
	case !slices.Equal(rm.Builtins, co.desc.Builtins):
		return fmt.Errorf("worker %s links builtin plugins %v, this run %v", rm.Worker, rm.Builtins, co.desc.Builtins)
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

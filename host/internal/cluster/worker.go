package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/identity"
	"github.com/agentanvil/anvil/host/internal/results"
)

// WorkerOptions configure `anvil-host worker`.
type WorkerOptions struct {
	URL  string
	Auth Auth
	// Name identifies the worker in faults and logs; host-pid when empty.
	Name string
	// Concurrency is the cases this worker evaluates at once per run;
	// twice the largest judge max_concurrency, at least 8, when 0.
	Concurrency int
	Logger      *slog.Logger
	// Getenv resolves the judges' API keys from this worker's own
	// environment; os.Getenv when nil.
	Getenv          func(string) string
	CompileCacheDir string
	// OnReady, when set, is called once the worker watches for runs
	// (tests wait on it instead of sleeping).
	OnReady func()

	// stamp overrides what the worker says it is (tests: a worker of
	// another build).
	stamp *stamp
}

// stamp is what a worker is, as far as results depend on it and before
// a run's config is loaded (the judges are the run's).
type stamp struct {
	abiMajor, abiMinor int
	kinds              []identity.Kind
}

func ownStamp() *stamp {
	return &stamp{abiMajor: abi.Major, abiMinor: abi.Minor, kinds: identity.New(nil, engine.BuiltinKinds()).Kinds}
}

// Worker serves runs.
type Worker struct {
	opts  WorkerOptions
	log   *slog.Logger
	c     *conn
	stamp *stamp
}

// RunWorker connects and serves every run published until ctx is done.
func RunWorker(ctx context.Context, opts WorkerOptions) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = host + "-" + strconv.Itoa(os.Getpid())
	}
	if !workerRE.MatchString(opts.Name) {
		return fmt.Errorf("worker name %q: use letters, digits, '.', '_' and '-' (at most 64)", opts.Name)
	}
	w := &Worker{opts: opts, log: opts.Logger.With("worker", opts.Name), stamp: opts.stamp}
	if w.stamp == nil {
		w.stamp = ownStamp()
	}
	var err error
	if w.c, err = dial(ctx, opts.URL, opts.Auth, "anvil-worker "+opts.Name, w.log); err != nil {
		return err
	}
	defer w.c.close()
	return w.serve(ctx)
}

// serve watches the runs bucket: a run put there is served until its key
// is deleted or replaced by a newer generation.
func (w *Worker) serve(ctx context.Context) error {
	watcher, err := w.c.runs.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", runsBucket, err)
	}
	defer func() { watcher.Stop() }()
	type serving struct {
		generation string
		stop       context.CancelFunc
		done       chan struct{}
	}
	runs := map[string]*serving{}
	defer func() {
		for _, s := range runs {
			s.stop()
			<-s.done
		}
	}()
	ready := w.opts.OnReady
	for {
		var e jetstream.KeyValueEntry
		var open bool
		select {
		case <-ctx.Done():
			return nil
		case e, open = <-watcher.Updates():
		}
		if !open {
			// The watch ended (the server went away for good): watch
			// again; the runs already served go on meanwhile.
			watcher.Stop()
			w.log.Warn("cluster: watch of runs ended; watching again")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			if again, err := w.c.runs.WatchAll(ctx); err == nil {
				watcher = again
			} else {
				w.log.Warn("cluster: watch of runs", "err", err)
				watcher = closedWatcher{}
			}
			continue
		}
		if e == nil {
			if ready != nil {
				ready()
				ready = nil
			}
			continue
		}
		runID := e.Key()
		if s := runs[runID]; s != nil && (e.Operation() != jetstream.KeyValuePut || !sameGeneration(e.Value(), s.generation)) {
			s.stop()
			<-s.done
			delete(runs, runID)
		}
		if e.Operation() != jetstream.KeyValuePut || runs[runID] != nil {
			continue
		}
		var desc RunDescription
		if err := decodeStrict(e.Value(), maxDescription, &desc); err != nil {
			w.log.Error("cluster: run description does not decode; not serving it", "run", runID, "err", err)
			continue
		}
		if err := desc.validate(); err != nil || desc.RunID != runID {
			w.log.Error("cluster: run description is invalid; not serving it", "run", runID, "err", err)
			continue
		}
		rctx, stop := context.WithCancel(ctx)
		s := &serving{generation: desc.Generation, stop: stop, done: make(chan struct{})}
		runs[runID] = s
		go func() {
			defer close(s.done)
			if err := w.serveRun(rctx, &desc); err != nil && rctx.Err() == nil {
				w.log.Error("cluster: stopped serving run", "run", runID, "err", err)
			}
		}()
	}
}

func sameGeneration(value []byte, generation string) bool {
	var d struct {
		Generation string `json:"generation"`
	}
	return json.Unmarshal(value, &d) == nil && d.Generation == generation
}

// serveRun evaluates a run's cases until ctx is done, or refuses the run.
func (w *Worker) serveRun(ctx context.Context, desc *RunDescription) error {
	eng, cleanup, err := w.openRun(ctx, desc)
	if err != nil {
		if ctx.Err() == nil {
			w.fault(desc.RunID, FaultRefused, err.Error())
		}
		return err
	}
	defer cleanup()
	cons, err := w.c.js.Consumer(ctx, casesStream, casesConsumer(desc.RunID))
	if err != nil {
		return fmt.Errorf("run %s: open consumer: %w", desc.RunID, err)
	}
	conc := w.opts.Concurrency
	if conc <= 0 {
		conc = eng.DefaultConcurrency()
	}
	w.log.Info("cluster: serving run", "run", desc.RunID, "concurrency", conc)
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { w.pull(runCtx, stop, cons, eng, desc) })
	}
	wg.Wait()
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// pull takes one case at a time: a case is delivered only when this
// worker has room for it, so its ack deadline starts when its work does.
func (w *Worker) pull(ctx context.Context, stop context.CancelCauseFunc, cons jetstream.Consumer, eng *engine.Engine, desc *RunDescription) {
	for ctx.Err() == nil {
		m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
				continue
			}
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				return // the run finished
			}
			w.log.Debug("cluster: fetch", "run", desc.RunID, "err", err)
			select { // the server may be restarting: try again shortly
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		if err := w.handle(ctx, m, eng, desc); err != nil {
			stop(err)
			return
		}
	}
}

// handle evaluates one case and publishes its result, then acks the case:
// in that order, so a worker killed in between loses nothing (the case
// comes back, its second result is a duplicate the coordinator ignores).
// It returns an error only when the worker must stop serving the run.
func (w *Worker) handle(ctx context.Context, m jetstream.Msg, eng *engine.Engine, desc *RunDescription) error {
	var cm CaseMessage
	if err := decodeStrict(m.Data(), maxCaseMessage, &cm); err != nil {
		_ = m.Term()
		w.log.Error("cluster: case message does not decode; dropped", "run", desc.RunID, "err", err)
		return nil
	}
	if err := cm.validate(desc.RunID); err != nil {
		_ = m.Term()
		w.log.Error("cluster: invalid case message; dropped", "run", desc.RunID, "err", err)
		return nil
	}
	// Say who took the case before working on it: if this worker dies on
	// it, the coordinator can name the last worker seen with it.
	if md, err := m.Metadata(); err == nil {
		b, _ := json.Marshal(DeliveryMessage{RunID: desc.RunID, Worker: w.opts.Name, CaseID: cm.Case.ID, Delivery: md.NumDelivered})
		if w.c.nc.Publish(deliveriesSubject(desc.RunID), b) == nil {
			_ = w.c.nc.FlushTimeout(time.Second)
		}
	}
	// Progress reports keep the case ours while it takes long.
	progress := time.NewTicker(time.Duration(desc.AckWaitMS) * time.Millisecond / 3)
	evalDone := make(chan struct{})
	go func() {
		for {
			select {
			case <-evalDone:
				return
			case <-progress.C:
				_ = m.InProgress()
			}
		}
	}()
	started := w.c.health.now()
	r := eng.Evaluate(ctx, cm.Case)
	close(evalDone)
	progress.Stop()
	if ctx.Err() != nil {
		w.handBack(m, desc.RunID, cm.Case.ID) // stopped mid-case: another worker takes it
		return nil
	}
	if down := eng.JudgeDown(); down != nil {
		_ = m.Nak()
		w.fault(desc.RunID, FaultJudgeDown, down.Error())
		return fmt.Errorf("judge down: %w", down)
	}
	if fault := w.c.health.since(started); fault != "" {
		markInfraFaults(r, fault)
	}
	data, err := json.Marshal(ResultMessage{
		RunID: desc.RunID, Generation: desc.Generation, Worker: w.opts.Name,
		ABIMajor: w.stamp.abiMajor, ABIMinor: w.stamp.abiMinor, Kinds: w.stamp.kinds,
		ConfigHash: eng.ConfigHash(), Plugins: eng.PluginDigests(), Result: r,
	})
	if err != nil {
		_ = m.Nak()
		return fmt.Errorf("encode result of case %q: %w", cm.Case.ID, err)
	}
	msg := &nats.Msg{Subject: resultsSubject(desc.RunID), Data: data}
	// The id is the publication's (its generation): JetStream keeps ids
	// after their messages are purged, and a result under an earlier
	// run's id would be dropped as a duplicate.
	mid := msgID("r", desc.RunID, cm.Case.ID) + "#" + desc.Generation
	if err := w.c.retry(ctx, "publish result of case "+strconvQuote(cm.Case.ID), func() error {
		_, err := w.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(mid))
		return err
	}); err != nil {
		_ = m.Nak()
		w.log.Warn("cluster: publish result failed; the case goes back to the queue", "case", cm.Case.ID, "err", err)
		return nil
	}
	if err := m.DoubleAck(ctx); err != nil {
		// The result is stored; a redelivery is a duplicate.
		w.log.Debug("cluster: ack", "case", cm.Case.ID, "err", err)
	}
	return nil
}

// markInfraFaults marks retryable the errors of a case during which this
// worker's transport failed (fault): a deadline that passed, or a judge
// call that failed, while the case waited on NATS — for a judge permit,
// the shared cache, the server itself — is the infrastructure's fault,
// not the plugin's or the case's, and --resume evaluates the case again.
// A deadline that passed while the transport was healthy is the guest's
// own and stays as it is. Errors a guest raises itself (traps, ABI
// violations, metric errors) are never marked.
func markInfraFaults(r *results.CaseResult, fault string) {
	for i := range r.Metrics {
		e := r.Metrics[i].Error
		if e == nil || e.Retryable || (e.Code != abi.CodeTimeout && e.Code != abi.CodeJudge) {
			continue
		}
		e.Retryable = true
		e.Message += " (while the cluster's transport failed: " + fault + "; retryable: --resume evaluates the case again)"
	}
}

// handBack returns a case this worker stopped working on — its run was
// published again (a resumed coordinator) or the worker is shutting down —
// without spending one of the case's deliveries, which --max-deliver keeps
// for workers that die or stall on it: while the run is still published,
// the case is published again as a new message and this delivery is
// terminated. Otherwise (or if that fails) a Nak hands it back.
func (w *Worker) handBack(m jetstream.Msg, runID, caseID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := w.c.runs.Get(ctx, runID); err != nil {
		_ = m.Nak()
		return
	}
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	msg := &nats.Msg{Subject: m.Subject(), Data: m.Data()}
	if _, err := w.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID("c", runID, caseID)+"#h"+hex.EncodeToString(nonce))); err != nil {
		_ = m.Nak()
		return
	}
	_ = m.Term()
}

// fault tells the run's coordinator this worker cannot serve it.
func (w *Worker) fault(runID, kind, reason string) {
	w.log.Error("cluster: cannot serve run", "run", runID, "kind", kind, "reason", reason)
	b, _ := json.Marshal(FaultMessage{RunID: runID, Worker: w.opts.Name, Kind: kind, Reason: truncate(reason, maxFault/2)})
	_ = w.c.nc.Publish(faultsSubject(runID), b)
	_ = w.c.nc.Flush()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// closedWatcher stands for a watch that could not be started: its
// updates channel is closed, so the loop tries again.
type closedWatcher struct{}

var closedUpdates = func() chan jetstream.KeyValueEntry {
	c := make(chan jetstream.KeyValueEntry)
	close(c)
	return c
}()

func (closedWatcher) Updates() <-chan jetstream.KeyValueEntry { return closedUpdates }
func (closedWatcher) Stop() error                             { return nil }

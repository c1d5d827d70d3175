package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/judge"
)

// CoordinatorOptions configure `run --cluster`.
type CoordinatorOptions struct {
	URL    string
	Auth   Auth
	Logger *slog.Logger
	// AckWait is how long a case may go without a worker's progress
	// report before it is delivered to another worker; 60s when 0.
	AckWait time.Duration
	// OnFault, when set, is called with each fault a worker reports (and
	// each result the coordinator refuses), after it is logged.
	OnFault func(FaultMessage)
}

// Coordinator publishes a run and gathers its results; it is the run's
// engine.Dispatcher.
type Coordinator struct {
	opts  CoordinatorOptions
	log   *slog.Logger
	c     *conn
	eng   *engine.Engine
	runID string
	desc  RunDescription
	// outputDir and resume are the run's, set by Run.
	outputDir string
	resume    bool

	mu       sync.Mutex
	refusals []FaultMessage
	limiters map[string]judge.Limiter // the cluster's judge budget, by judge
}

// DefaultAckWait is the cases' ack deadline when none is given.
const DefaultAckWait = 60 * time.Second

// NewCoordinator connects to the NATS server. The run is published when
// the engine starts dispatching (after its once-per-run work).
func NewCoordinator(ctx context.Context, opts CoordinatorOptions) (*Coordinator, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.AckWait <= 0 {
		opts.AckWait = DefaultAckWait
	}
	co := &Coordinator{opts: opts, log: opts.Logger}
	var err error
	if co.c, err = dial(ctx, opts.URL, opts.Auth, "anvil-coordinator", opts.Logger); err != nil {
		return nil, err
	}
	return co, nil
}

// EngineOptions sets what the coordinator's engine shares with the
// workers: its judges read and record the cluster's shared cache, and take
// their permits from the cluster's one budget.
func (co *Coordinator) EngineOptions(o *engine.Options) {
	o.JudgeCache = kvCache{kv: co.c.cache}
	o.JudgeLimits = func(name string) judge.Limiter { return budgetLimiter{co: co, judge: name} }
}

// budgetLimiter is the coordinator's own judges' way into the budget
// (its once-per-run work): the same limiter the workers' permits come from.
type budgetLimiter struct {
	co    *Coordinator
	judge string
}

func (b budgetLimiter) Acquire(ctx context.Context, tokens int) (func(), error) {
	l, ok := b.co.limiter(b.judge)
	if !ok {
		return nil, fmt.Errorf("no judge named %q", b.judge)
	}
	return l.Acquire(ctx, tokens)
}

// limiter is the budget of one judge, built on first use from the
// judge's configuration.
func (co *Coordinator) limiter(name string) (judge.Limiter, bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if l, ok := co.limiters[name]; ok {
		return l, true
	}
	if co.eng == nil {
		return nil, false
	}
	cfg, ok := co.eng.JudgeConfig(name)
	if !ok {
		return nil, false
	}
	if co.limiters == nil {
		co.limiters = map[string]judge.Limiter{}
	}
	l := judge.NewLimiter(cfg)
	co.limiters[name] = l
	return l, true
}

// runName names the run of an output directory: with the host name, so
// that `run --cluster --resume` on the same machine and directory finds
// the run again.
func runName(outputDir string) (string, error) {
	abs, err := filepath.Abs(outputDir)
	if err != nil {
		return "", fmt.Errorf("output dir: %w", err)
	}
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + abs))
	return hex.EncodeToString(sum[:8]), nil
}

// RunID names the run in NATS (subjects, consumer, key).
func (co *Coordinator) RunID() string { return co.runID }

// Bind sets the engine whose cases this coordinator dispatches.
func (co *Coordinator) Bind(eng *engine.Engine) { co.eng = eng }

// Refusals are the faults workers reported: runs they refused, judges
// that went down on them.
func (co *Coordinator) Refusals() []FaultMessage {
	co.mu.Lock()
	defer co.mu.Unlock()
	return slices.Clone(co.refusals)
}

// Close disconnects.
func (co *Coordinator) Close() { co.c.close() }

// Finish ends the run in NATS once its outputs are written: workers stop
// serving it and its cases and results are purged. A run that did not
// complete is left as it is, for `--resume`.
func (co *Coordinator) Finish(ctx context.Context) error {
	var errs []error
	if err := co.c.runs.Purge(ctx, co.runID); err != nil {
		errs = append(errs, fmt.Errorf("remove run %s from %s: %w", co.runID, runsBucket, err))
	}
	if err := co.c.js.DeleteConsumer(ctx, casesStream, casesConsumer(co.runID)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		errs = append(errs, fmt.Errorf("delete consumer: %w", err))
	}
	errs = append(errs, co.purge(ctx))
	return errors.Join(errs...)
}

func (co *Coordinator) purge(ctx context.Context) error {
	var errs []error
	for stream, subject := range map[string]string{casesStream: casesSubject(co.runID), resultsStream: resultsSubject(co.runID)} {
		s, err := co.c.js.Stream(ctx, stream)
		if err == nil {
			err = s.Purge(ctx, jetstream.WithPurgeSubject(subject))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", subject, err))
		}
	}
	return errors.Join(errs...)
}

// publishRun puts the plugins in the object store, opens the cases'
// consumer and publishes the run description. A fresh run first clears
// what an earlier run of the same name left.
func (co *Coordinator) publishRun(ctx context.Context) error {
	eng := co.eng
	cfg := eng.Config()
	if !co.resume {
		if err := co.c.js.DeleteConsumer(ctx, casesStream, casesConsumer(co.runID)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("cluster: clear the previous run: %w", err)
		}
		if err := co.purge(ctx); err != nil {
			return fmt.Errorf("cluster: clear the previous run: %w", err)
		}
	}
	digests := eng.PluginDigests()
	for _, name := range sortedNames(digests) {
		if err := co.uploadPlugin(ctx, name, cfg.Resolve(cfg.Plugins[name].Path), digests[name]); err != nil {
			return err
		}
	}
	cfgBytes, err := os.ReadFile(cfg.File)
	if err != nil {
		return fmt.Errorf("cluster: read %s: %w", cfg.File, err)
	}
	gen := make([]byte, 8)
	_, _ = rand.Read(gen)
	co.desc = RunDescription{
		Protocol: protocolVersion, RunID: co.runID, Generation: hex.EncodeToString(gen),
		ABIMajor: abi.Major, ABIMinor: abi.Minor, Builtins: builtins(),
		ConfigName: filepath.Base(cfg.File), ConfigYAML: cfgBytes, ConfigHash: eng.ConfigHash(),
		Plugins: digests, Prepared: eng.PreparedMetrics(), CacheMode: eng.CacheMode(),
		Unconfigured: eng.UnconfiguredJudges(), AckWaitMS: co.opts.AckWait.Milliseconds(),
		Budget: true,
	}
	if err := co.desc.validate(); err != nil {
		return fmt.Errorf("cluster: run description: %w", err)
	}
	if _, err := co.c.js.CreateOrUpdateConsumer(ctx, casesStream, jetstream.ConsumerConfig{
		Durable: casesConsumer(co.runID), FilterSubject: casesSubject(co.runID),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: co.opts.AckWait,
		MaxDeliver: -1, MaxAckPending: 100_000,
	}); err != nil {
		return fmt.Errorf("cluster: create consumer %s: %w", casesConsumer(co.runID), err)
	}
	b, _ := json.Marshal(co.desc)
	if len(b) > maxDescription {
		return fmt.Errorf("cluster: the run description is %d bytes, over the %d-byte limit (config and prepared state too large)", len(b), maxDescription)
	}
	if _, err := co.c.runs.Put(ctx, co.runID, b); err != nil {
		return fmt.Errorf("cluster: publish run %s: %w", co.runID, err)
	}
	co.log.Info("cluster run published", "run", co.runID, "generation", co.desc.Generation)
	return nil
}

// uploadPlugin puts a plugin's bytes in the object store under its
// digest, after checking them against it (the file may have changed since
// the engine loaded it).
func (co *Coordinator) uploadPlugin(ctx context.Context, name, path, digest string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cluster: plugin %s@%s: %w", name, digest, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPlugin+1))
	if err != nil {
		return fmt.Errorf("cluster: plugin %s@%s: read %s: %w", name, digest, path, err)
	}
	if len(data) > maxPlugin {
		return fmt.Errorf("cluster: plugin %s@%s: %s is over %d bytes", name, digest, path, maxPlugin)
	}
	if got := sha256Digest(data); got != digest {
		return fmt.Errorf("cluster: plugin %s: %s is now %s, loaded as %s (it changed during the run)", name, path, got, digest)
	}
	// Content-addressed: an object already under this name is kept only
	// when its bytes are these (the store's own SHA-256 says so); anything
	// else there is replaced.
	h := sha256.New()
	h.Write(data)
	if info, err := co.c.plugins.GetInfo(ctx, digest); err == nil && info.Digest == jetstream.GetObjectDigestValue(h) {
		return nil
	}
	if _, err := co.c.plugins.PutBytes(ctx, digest, data); err != nil {
		return fmt.Errorf("cluster: plugin %s@%s: upload: %w", name, digest, err)
	}
	return nil
}

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
	// written: cases emitted by this dispatch or done before a resume.
	written  map[string]bool
	attempts int
	emit     func(*engine.CaseResult) error
}

type caseRef struct {
	hash [32]byte
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
	ps := &permitServer{log: co.log, limiters: co.limiter}
	stopPermits, err := ps.serve(ctx, co.c.nc, co.runID)
	if err != nil {
		return fmt.Errorf("cluster: serve judge permits: %w", err)
	}
	defer stopPermits()
	if err := co.publishRun(ctx); err != nil {
		return err
	}
	d := &dispatch{co: co, expected: map[string]caseRef{}, early: map[string]*engine.CaseResult{}, written: map[string]bool{}, emit: emit}
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
	defer close(finished) // first: a callback blocked on results returns
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
	return d.emit(r)
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

// builtins lists the first-party plugins linked into this host.
func builtins() []string {
	var out []string
	for _, p := range engine.FirstParty() {
		d := p.Describe()
		out = append(out, d.Name+"@"+d.Version)
	}
	slices.Sort(out)
	return out
}

func sha256Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

var _ engine.Dispatcher = (*Coordinator)(nil)

// Run evaluates eng's run on the cluster: eng prepares once, the workers
// evaluate, and eng writes results.jsonl, cases/ and summary.json as a
// local run does. A run that completes is then removed from NATS; one
// that stops early stays there for `run --cluster --resume`.
func (co *Coordinator) Run(ctx context.Context, eng *engine.Engine, ro engine.RunOptions) (*engine.Summary, error) {
	co.Bind(eng)
	if ro.OutputDir == "" {
		ro.OutputDir = eng.OutputDir()
	}
	runID, err := runName(ro.OutputDir)
	if err != nil {
		return nil, &engine.RunError{Kind: engine.ErrInput, Err: err}
	}
	co.runID, co.outputDir, co.resume = runID, ro.OutputDir, ro.Resume
	ro.Dispatch = co
	ro.ResumeArgs = "--cluster " + shellWord(redactURL(co.opts.URL))
	s, err := eng.Run(ctx, ro)
	if err != nil {
		return s, err
	}
	if ferr := co.Finish(context.WithoutCancel(ctx)); ferr != nil {
		co.log.Warn("cluster: the run is complete and written; cleaning it up in NATS failed", "err", ferr)
	}
	return s, nil
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

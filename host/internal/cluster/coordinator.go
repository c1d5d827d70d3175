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
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/internal/results"
)

// CoordinatorOptions configure `run --cluster`.
type CoordinatorOptions struct {
	URL    string
	Auth   Auth
	Logger *slog.Logger
	// AckWait is how long a case may go without a worker's progress
	// report before it is delivered to another worker; 60s when 0.
	AckWait time.Duration
	// MaxDeliver bounds how often a case is delivered: a case every
	// worker dies on or goes silent on (a poison case) is written as an
	// error after this many deliveries instead of being waited for
	// forever; DefaultMaxDeliver when 0.
	MaxDeliver int
	// OnFault, when set, is called with each fault a worker reports (and
	// each result the coordinator refuses), after it is logged.
	OnFault func(FaultMessage)
	// StallAfter is how long the coordinator waits without writing a
	// case, while cases are pending, before it says so (and why, as far
	// as it knows) on its log; DefaultStallAfter when 0.
	StallAfter time.Duration

	// clock and ticks replace time.Now and the watchdog's ticker, and
	// resultHandled is called after each message of the results stream
	// (tests).
	clock         func() time.Time
	ticks         <-chan time.Time
	resultHandled func()
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

	mu          sync.Mutex
	refusals    []FaultMessage // the first maxRefusals
	lastRefusal FaultMessage
	limiters    map[string]judge.Limiter // the cluster's judge budget, by judge
	// lastTaken is the last worker each pending case was delivered to, as
	// the workers say (DeliveryMessage).
	lastTaken map[string]takenBy
	// workers are the names of the workers seen (deliveries, results,
	// faults), at most maxWorkersSeen, with when each was last seen.
	workers map[string]time.Time
}

// maxRefusals bounds the refusals a coordinator keeps: peers decide how
// many they send.
const maxRefusals = 1000

type takenBy struct {
	worker   string
	delivery uint64
}

// DefaultAckWait is the cases' ack deadline when none is given.
const DefaultAckWait = 60 * time.Second

// DefaultStallAfter is how long a coordinator goes without writing a
// case before it says so, when not configured: longer than a healthy
// case, short enough that nobody stares at a silent run for long.
const DefaultStallAfter = time.Minute

// DefaultMaxDeliver is how often a case is delivered before it is written
// as an error, when not configured: enough for a case to survive a few
// lost workers, few enough that a case which kills every worker costs
// minutes, not the run.
const DefaultMaxDeliver = 5

// NewCoordinator connects to the NATS server. The run is published when
// the engine starts dispatching (after its once-per-run work).
func NewCoordinator(ctx context.Context, opts CoordinatorOptions) (*Coordinator, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.AckWait <= 0 {
		opts.AckWait = DefaultAckWait
	}
	if opts.MaxDeliver <= 0 {
		opts.MaxDeliver = DefaultMaxDeliver
	}
	if opts.StallAfter <= 0 {
		opts.StallAfter = DefaultStallAfter
	}
	if opts.clock == nil {
		opts.clock = time.Now
	}
	co := &Coordinator{opts: opts, log: opts.Logger, lastTaken: map[string]takenBy{}, workers: map[string]time.Time{}}
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
	o.JudgeCache = co.c.judgeCache()
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

func (co *Coordinator) now() time.Time { return co.opts.clock() }

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
	for stream, subject := range map[string]string{casesStream: casesSubject(co.runID), resultsStream: resultsSubject(co.runID),
		exhaustedStream: exhaustedSubject(co.runID)} {
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
		if err := co.upload(ctx, "plugin "+name, cfg.Resolve(cfg.Plugins[name].Path), digests[name], maxPlugin); err != nil {
			return err
		}
	}
	recordings := eng.RecordedJudges()
	for _, name := range sortedNames(recordings) {
		jc := cfg.Judges[name]
		if jc == nil || jc.OfflineRecording == "" {
			return fmt.Errorf("cluster: judge %s is replayed but has no offline_recording", name)
		}
		if err := co.upload(ctx, "judge "+name+" offline_recording", cfg.Resolve(jc.OfflineRecording), recordings[name], maxRecording); err != nil {
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
		ABIMajor: abi.Major, ABIMinor: abi.Minor, Identity: eng.Identity(),
		ConfigName: filepath.Base(cfg.File), ConfigYAML: cfgBytes, ConfigHash: eng.ConfigHash(),
		Plugins: digests, Recordings: recordings, Prepared: eng.PreparedMetrics(), CacheMode: eng.CacheMode(),
		Unconfigured: eng.UnconfiguredJudges(), AckWaitMS: co.opts.AckWait.Milliseconds(),
		Budget: true,
	}
	if err := co.desc.validate(); err != nil {
		return fmt.Errorf("cluster: run description: %w", err)
	}
	if _, err := co.c.js.CreateOrUpdateConsumer(ctx, casesStream, jetstream.ConsumerConfig{
		Durable: casesConsumer(co.runID), FilterSubject: casesSubject(co.runID),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: co.opts.AckWait,
		MaxDeliver: co.opts.MaxDeliver, MaxAckPending: 100_000,
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

// upload puts a file the run needs (a plugin, a judge recording) in the
// object store under its digest, after checking its bytes against it (the
// file may have changed since the engine loaded it). what names it in
// errors ("plugin textcheck").
func (co *Coordinator) upload(ctx context.Context, what, path, digest string, limit int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cluster: %s@%s: %w", what, digest, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("cluster: %s@%s: read %s: %w", what, digest, path, err)
	}
	if len(data) > limit {
		return fmt.Errorf("cluster: %s@%s: %s is over %d bytes", what, digest, path, limit)
	}
	if got := sha256Digest(data); got != digest {
		return fmt.Errorf("cluster: %s: %s is now %s, loaded as %s (it changed during the run)", what, path, got, digest)
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
		return fmt.Errorf("cluster: %s@%s: upload: %w", what, digest, err)
	}
	return nil
}

// Run evaluates eng's run on the cluster: eng prepares once, the workers
// evaluate, and eng writes results.jsonl, cases/ and summary.json as a
// local run does. A run that completes is then removed from NATS; one
// that stops early stays there for `run --cluster --resume`.
func (co *Coordinator) Run(ctx context.Context, eng *engine.Engine, ro engine.RunOptions) (*results.Summary, error) {
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

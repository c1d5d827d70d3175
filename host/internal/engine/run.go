package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/judge"
	"github.com/agentanvil/anvil/host/internal/results"
)

// RunError is why a run did not finish: what kind of failure (the CLI maps
// it to an exit code) and, when the run had started writing results, the
// summary it left, marked incomplete, with the command that resumes it.
type RunError struct {
	Kind    RunErrorKind
	Err     error
	Summary *results.Summary // nil when nothing was evaluated
}

// RunErrorKind classifies a RunError.
type RunErrorKind int

const (
	// ErrInput: the dataset or the options are wrong; nothing was evaluated.
	ErrInput RunErrorKind = iota + 1
	// ErrUnverifiable: the run could not go on and verify anything more
	// (a judge that is down, results that cannot be written).
	ErrUnverifiable
	// ErrInterrupted: the context was cancelled (Ctrl-C, SIGTERM).
	ErrInterrupted
)

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// Run evaluates the dataset and returns the summary of every case in the
// output directory (including those done before a --resume). The dataset is
// read whole before the first judge call: a record that does not parse or
// a duplicate id stops the run before anything is spent. A run that stops
// early still writes summary.json, marked incomplete, and returns a
// *RunError carrying it.
func (e *Engine) Run(ctx context.Context, ro RunOptions) (*results.Summary, error) {
	started := time.Now().UTC()
	input := ro.Input
	if input == "" {
		input = e.cfg.Resolve(e.cfg.Dataset)
	}
	if input == "" {
		return nil, &RunError{Kind: ErrInput, Err: fmt.Errorf("no dataset: pass --input or set dataset in %s", e.cfg.File)}
	}
	if ro.Limit < 0 || ro.Concurrency < 0 {
		return nil, &RunError{Kind: ErrInput, Err: fmt.Errorf("limit %d, concurrency %d: must not be negative", ro.Limit, ro.Concurrency)}
	}
	outDir := ro.OutputDir
	if outDir == "" {
		outDir = e.OutputDir()
	}
	conc := ro.Concurrency
	if conc == 0 {
		conc = e.cfg.Defaults.Concurrency
	}
	if conc <= 0 {
		conc = e.defaultConcurrency()
	}

	check, err := e.CheckDataset(ctx, input)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &RunError{Kind: ErrInterrupted, Err: fmt.Errorf("run interrupted while checking the dataset; nothing was evaluated: %w", ctx.Err())}
		}
		return nil, &RunError{Kind: ErrInput, Err: fmt.Errorf("dataset check (nothing was evaluated): %w", err)}
	}
	for _, g := range check.Gaps {
		e.logger.Warn(g.String())
	}

	// The summary is built as cases become durable, from the cases of
	// earlier runs (--resume) on, as is what ro.Sink builds.
	summarizer := results.NewSummarizer(e.configured())
	sink := results.Sinks{summarizer}
	if ro.Sink != nil {
		sink = append(sink, ro.Sink)
	}
	var done map[string]bool
	var resume *results.ResumeReport
	if ro.Resume {
		var unchecked int
		check := func(id, where string) error { return e.checkIdentity(id, where, outDir) }
		if done, resume, unchecked, err = results.ReadDone(outDir, e.hash, check, sink); err != nil {
			return nil, &RunError{Kind: ErrInput, Err: err}
		}
		if unchecked > 0 {
			e.logger.Warn("resume: results.jsonl has cases written before judge identities were recorded; that their judge is this run's cannot be checked",
				"file", filepath.Join(outDir, "results.jsonl"), "cases", unchecked, "judges", describeJudges(e.identity))
		}
		if resume.TornLineBytes > 0 {
			e.logger.Warn("resume: dropped a torn last line of results.jsonl (a case cut off mid-write); that case is evaluated again",
				"file", filepath.Join(outDir, "results.jsonl"), "bytes", resume.TornLineBytes)
		}
	}
	if err := clearStaleOutputs(outDir, ro.Resume); err != nil {
		return nil, &RunError{Kind: ErrUnverifiable, Err: err}
	}
	total := check.Cases
	if ro.Limit > 0 {
		total = min(total, ro.Limit)
	}
	durable := len(done)
	w, err := results.OpenWriter(outDir, results.WriterOptions{Resume: ro.Resume, Sink: sink, OnDurable: func(n int) {
		durable += n // only the writer goroutine calls this
		e.logger.Debug("results committed", "cases", n, "durable", durable, "total", total)
		if ro.Progress != nil {
			ro.Progress(durable, total)
		}
	}})
	if err != nil {
		return nil, &RunError{Kind: ErrUnverifiable, Err: err}
	}

	// The run's own context: a judge that goes down stops it at once, with
	// that judge's fault as the cause.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	unwatch := e.judges.watch(func(err error) { stop(err) })
	defer unwatch()
	// So does a plugin refused when its background compile ends.
	unwatchPlugins := e.compiling.watch(func(err error) { stop(err) })
	defer unwatchPlugins()

	waitPrepared := e.startPrepares(runCtx, nil)
	// unwritten is the judge work of cases the run stopped before writing:
	// the server received those requests (the very ones that opened a
	// breaker among them), so the summary counts them too.
	var unwrittenMu sync.Mutex
	var unwritten results.JudgeUsage
	cases := make(chan *abi.TestCase)
	errc := make(chan error, 1)
	var dispatchErr error
	var wg sync.WaitGroup
	if ro.Dispatch != nil {
		// Evaluated elsewhere: the dispatcher hands back finished cases,
		// which this process writes as its own workers' would be. It
		// publishes the once-per-run work with the run, so that work is
		// finished first (else every worker would do it again).
		wg.Go(func() {
			waitPrepared()
			resumed := Resumed{Written: map[string]bool{}, Retried: map[string]bool{}}
			maps.Copy(resumed.Written, done)
			if resume != nil {
				maps.Copy(resumed.Retried, resume.RetriedCases)
			}
			dispatchErr = ro.Dispatch.Dispatch(runCtx, resumed, cases, func(r *results.CaseResult) error {
				if err := w.Write(r); err != nil {
					select {
					case errc <- err:
					default:
					}
					stop(err)
					return err
				}
				return nil
			})
			if dispatchErr != nil {
				stop(dispatchErr)
			}
		})
	}
	for range conc {
		if ro.Dispatch != nil {
			break
		}
		wg.Go(func() {
			for c := range cases {
				// A case's judge calls may go into batches; prepare
				// work (startPrepares) is made live, first.
				r := e.evaluate(judge.WithBatching(runCtx), c, nil)
				if runCtx.Err() != nil {
					// Stopped: a half-evaluated case is not written, but
					// what it spent is counted.
					unwrittenMu.Lock()
					for _, mr := range r.Metrics {
						unwritten.Merge(mr.Usage)
					}
					unwrittenMu.Unlock()
					return
				}
				if err := w.Write(r); err != nil {
					select {
					case errc <- err:
					default:
					}
					stop(err)
					return
				}
			}
		})
	}
	readErr := e.feed(runCtx, input, done, ro.Limit, cases)
	close(cases)
	wg.Wait()
	waitPrepared()
	writeErr := w.Close()
	select {
	case err := <-errc:
		writeErr = errors.Join(err, writeErr)
	default:
	}

	meta := runMeta{started: started, resume: resume, gaps: check.Gaps, outDir: outDir, unwritten: unwritten}
	var stopped *RunError
	switch {
	case writeErr != nil:
		stopped = &RunError{Kind: ErrUnverifiable, Err: fmt.Errorf("writing results: %w", writeErr)}
	case ctx.Err() != nil:
		stopped = &RunError{Kind: ErrInterrupted, Err: fmt.Errorf("run interrupted: %w", ctx.Err())}
	case dispatchErr != nil && !errors.Is(dispatchErr, context.Canceled):
		stopped = &RunError{Kind: ErrUnverifiable, Err: dispatchErr}
	case runCtx.Err() != nil:
		stopped = &RunError{Kind: ErrUnverifiable, Err: context.Cause(runCtx)}
	case readErr != nil:
		stopped = &RunError{Kind: ErrInput, Err: readErr}
	}
	if stopped != nil {
		resume := e.resumeCommand(outDir)
		if ro.ResumeArgs != "" {
			resume += " " + ro.ResumeArgs
		}
		meta.incomplete = &results.Incomplete{Reason: stopped.Err.Error(), Resume: resume}
	}
	s, err := e.writeSummary(outDir, summarizer, meta)
	if stopped != nil {
		if err != nil {
			stopped.Err = errors.Join(stopped.Err, err)
		}
		stopped.Summary = s
		return s, stopped
	}
	if err != nil {
		return nil, &RunError{Kind: ErrUnverifiable, Err: err}
	}
	return s, nil
}

// runMeta is what the summary says about the run beyond its results.
type runMeta struct {
	started    time.Time
	resume     *results.ResumeReport
	gaps       []results.FieldGap
	incomplete *results.Incomplete
	outDir     string
	// unwritten is the judge work of cases stopped before being written.
	unwritten results.JudgeUsage
}

// writeSummary completes the summary of the cases written and writes
// summary.json.
func (e *Engine) writeSummary(outDir string, z *results.Summarizer, meta runMeta) (*results.Summary, error) {
	s := z.Summary(e.hash, e.prepareSummaries(), e.maxErrorRates())
	s.RunID = newRunID()
	s.StartedAt = meta.started
	s.FinishedAt = time.Now().UTC()
	s.Resume = meta.resume
	s.FieldGaps = meta.gaps
	s.Judges = e.judgeReports()
	s.Unpriced = e.unpriced(s.Judges, true)
	id := e.identity
	s.Identity = &id
	s.Cache = e.cacheReport()
	s.Graphs = e.dagOutlines()
	if meta.unwritten != (results.JudgeUsage{}) {
		// Requests and attempts must match what the server received; the
		// per-metric figures stay those of the written results.
		s.Judge.Merge(meta.unwritten)
		if meta.incomplete != nil {
			u := meta.unwritten
			meta.incomplete.UnwrittenJudge = &u
		}
	}
	s.Decide(meta.incomplete)
	return s, results.WriteSummary(outDir, s)
}

// maxErrorRates are the metrics' max_error_rate, where configured: what
// the gate needs to know of each metric beyond its results.
func (e *Engine) maxErrorRates() map[string]float64 {
	p := map[string]float64{}
	for _, m := range e.all {
		if m.cfg.MaxErrorRate != nil {
			p[m.key] = *m.cfg.MaxErrorRate
		}
	}
	return p
}

// dagOutlines outlines every dag metric's graph, in configuration order.
func (e *Engine) dagOutlines() []dag.Outline {
	var out []dag.Outline
	for _, m := range e.allInOrder() {
		if m.graph != nil {
			out = append(out, m.graph.Outline(m.key))
		}
	}
	return out
}

// resumeCommand is the command line that finishes an incomplete run.
func (e *Engine) resumeCommand(outDir string) string {
	return fmt.Sprintf("anvil-host run -c %s -o %s --resume", shellQuote(e.cfg.File), shellQuote(outDir))
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// feed streams cases to the workers, skipping those already done and
// stopping at limit (cases counted in file order, done ones included). The
// dataset was checked whole before; a record that fails now means the file
// changed under the run.
func (e *Engine) feed(ctx context.Context, input string, done map[string]bool, limit int, cases chan<- *abi.TestCase) error {
	ds, err := OpenDataset(input)
	if err != nil {
		return err
	}
	defer ds.Close()
	n := 0
	for {
		if limit > 0 && n >= limit {
			return nil
		}
		c, err := ds.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the dataset changed during the run: %w", err)
		}
		n++
		if done[c.ID] {
			continue
		}
		select {
		case cases <- c:
		case <-ctx.Done():
			return nil
		}
	}
}

// Package progress reports a run's progress while it goes: how many cases
// are done of how many, how they came out (passed, failed, error), the
// judge calls and dollars they cost, and when the run should end.
//
// A Tracker counts; it is a results.Sink, given each case once it is
// durable, and told done/total by the engine's Progress callback. Two
// renderings read it: Plain, lines for a log that is not a terminal (a CI
// job's), and Bar, the terminal's progress bar. Both show the same counts
// (Counts.String).
//
// Invariants: the counts are of the cases the run's output holds, those a
// resumed run found already written included, as done is; the ETA is
// measured from the first case this process wrote, so neither a resume's
// cases nor the start-up (plugin compiles, once-per-run preparation) make
// it optimistic; time comes only from the Clock given, so tests drive it.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/agentanvil/anvil/host/internal/results"
)

// Counts is a run's progress at one moment.
type Counts struct {
	Done, Total int // Total 0 while unknown
	// Passed, Failed, Errors and Skipped partition the done cases by
	// their worst metric: any error makes an error case, else any failure
	// (gated or not) a failed one, else every metric skipped a skipped
	// one; the rest passed.
	Passed, Failed, Errors, Skipped int
	// Calls and USD are the judge work of the done cases (upstream calls,
	// cache hits excluded; the once-per-run preparation is not a case's).
	Calls int
	USD   float64
	// ETA is the time left at the rate since the first case this process
	// wrote; unknown (HasETA false) until a second batch of cases is
	// durable.
	ETA    time.Duration
	HasETA bool
}

// String is the counts as a Plain line shows them.
func (c Counts) String() string {
	if c.Total > 0 {
		return fmt.Sprintf("%d/%d cases (%d%%) · %s", c.Done, c.Total, c.Done*100/c.Total, c.Outcomes())
	}
	return fmt.Sprintf("%d cases · %s", c.Done, c.Outcomes())
}

// Outcomes is the counts but done/total, as the bar's description (beside
// its own count and share) and String show them.
func (c Counts) Outcomes() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d passed · %d failed · %d errors", c.Passed, c.Failed, c.Errors)
	if c.Skipped > 0 {
		fmt.Fprintf(&b, " · %d skipped", c.Skipped)
	}
	fmt.Fprintf(&b, " · %d judge calls · $%.4f", c.Calls, c.USD)
	switch {
	case c.Total > 0 && c.Done >= c.Total:
	case c.HasETA:
		fmt.Fprintf(&b, " · ETA %s", c.ETA.Round(time.Second))
	default:
		b.WriteString(" · ETA -")
	}
	return b.String()
}

// Clock is where a Tracker reads the time.
type Clock func() time.Time

// Tracker counts a run's cases. It is safe for concurrent use: the
// results writer's goroutine adds cases and reports done/total while a
// ticker (Plain.Run) reads it.
type Tracker struct {
	now Clock

	mu     sync.Mutex
	c      Counts
	first  bool      // a done/total was reported
	t0     time.Time // when it was
	done0  int       // and the done it reported
	last   time.Time
	lastOK bool
}

// NewTracker returns a Tracker reading the time from now (time.Now when
// nil).
func NewTracker(now Clock) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{now: now}
}

// Add counts one durable case (results.Sink).
func (t *Tracker) Add(r *results.CaseResult) {
	var errs, fails, skips int
	var calls int
	var usd float64
	for _, m := range r.Metrics {
		switch m.Status {
		case results.StatusPassed:
		case results.StatusFailed:
			fails++
		case results.StatusSkipped:
			skips++
		default:
			errs++
		}
		calls += m.Usage.Calls
		usd += m.Usage.USD
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case errs > 0:
		t.c.Errors++
	case fails > 0:
		t.c.Failed++
	case len(r.Metrics) > 0 && skips == len(r.Metrics):
		t.c.Skipped++
	default:
		t.c.Passed++
	}
	t.c.Calls += calls
	t.c.USD += usd
}

// Update records done of total cases durable (engine.RunOptions.Progress).
func (t *Tracker) Update(done, total int) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.Done, t.c.Total = done, total
	if !t.first {
		t.first, t.t0, t.done0 = true, now, done
		return
	}
	t.last, t.lastOK = now, true
}

// Counts is the progress now.
func (t *Tracker) Counts() Counts {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.c
	if t.lastOK && c.Total > 0 && c.Done > t.done0 {
		// The rate over the cases written since the first batch, applied
		// to what is left, from now (a stall since the last batch counts).
		per := now.Sub(t.t0) / time.Duration(c.Done-t.done0)
		c.ETA, c.HasETA = per*time.Duration(max(c.Total-c.Done, 0)), true
	}
	return c
}

// Plain writes progress lines for a log: one every Interval, and one each
// time the done share passes a tenth (10%, 20%, … 100%), whichever comes
// first. A line when nothing changed still says the run is alive.
type Plain struct {
	t        *Tracker
	w        io.Writer
	interval time.Duration

	mu       sync.Mutex
	lastLine time.Time
	decile   int // the last tenth a line was written for
}

// NewPlain returns a Plain writing t's lines to w, one at least every
// interval while the run goes.
func NewPlain(t *Tracker, w io.Writer, interval time.Duration) *Plain {
	return &Plain{t: t, w: w, interval: interval, lastLine: t.now(), decile: -1}
}

// Update is Tracker.Update, then a line if the done share passed a tenth
// or the interval is up: what the engine's Progress callback calls.
func (p *Plain) Update(done, total int) {
	p.t.Update(done, total)
	p.mu.Lock()
	defer p.mu.Unlock()
	d := -1
	if total > 0 {
		d = min(done, total) * 10 / total
	}
	if d > p.decile {
		p.decile = d
		p.line()
		return
	}
	p.tickLocked()
}

// Tick writes a line if the interval has passed since the last one: what
// Run calls on a ticker, and a test after moving its clock.
func (p *Plain) Tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tickLocked()
}

func (p *Plain) tickLocked() {
	if p.t.now().Sub(p.lastLine) >= p.interval {
		p.line()
	}
}

func (p *Plain) line() {
	p.lastLine = p.t.now()
	fmt.Fprintf(p.w, "progress: %s\n", p.t.Counts())
}

// Run calls Tick on a real ticker until stop is closed.
func (p *Plain) Run(stop <-chan struct{}) {
	tick := time.NewTicker(min(p.interval, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			p.Tick()
		}
	}
}

// Bar is the terminal's progress bar over a Tracker: its count, share and
// elapsed time, and the Tracker's outcomes, calls, dollars and ETA as its
// description.
type Bar struct {
	t   *Tracker
	w   io.Writer
	bar *progressbar.ProgressBar
}

// NewBar returns a Bar drawing t on w (a terminal).
func NewBar(t *Tracker, w io.Writer) *Bar { return &Bar{t: t, w: w} }

// Update is Tracker.Update, then the bar redrawn (at most every 100ms).
func (b *Bar) Update(done, total int) {
	b.t.Update(done, total)
	if b.bar == nil {
		b.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(b.w),
			progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	b.bar.Describe(b.t.Counts().Outcomes())
	_ = b.bar.Set(done)
}

// Finish completes the bar, which clears it.
func (b *Bar) Finish() {
	if b.bar != nil {
		_ = b.bar.Finish()
	}
}

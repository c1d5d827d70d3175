package progress_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentanvil/anvil/host/internal/progress"
	"github.com/agentanvil/anvil/host/internal/results"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func caseWith(id string, calls int, usd float64, statuses ...string) *results.CaseResult {
	r := &results.CaseResult{CaseID: id}
	for i, s := range statuses {
		m := results.MetricResult{Metric: "m" + string(rune('a'+i)), Status: s}
		if i == 0 {
			m.Usage = results.JudgeUsage{Calls: calls, USD: usd}
		}
		r.Metrics = append(r.Metrics, m)
	}
	return r
}

func TestCaseOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		statuses []string
		want     string
	}{
		{"all passed", []string{results.StatusPassed, results.StatusPassed}, "0/1 cases (0%) · 1 passed · 0 failed · 0 errors"},
		{"a failure", []string{results.StatusPassed, results.StatusFailed}, "0/1 cases (0%) · 0 passed · 1 failed · 0 errors"},
		{"an error beats a failure", []string{results.StatusFailed, results.StatusError}, "0/1 cases (0%) · 0 passed · 0 failed · 1 errors"},
		{"all skipped", []string{results.StatusSkipped}, "0/1 cases (0%) · 0 passed · 0 failed · 0 errors · 1 skipped"},
		{"a skip beside a pass", []string{results.StatusSkipped, results.StatusPassed}, "0/1 cases (0%) · 1 passed · 0 failed · 0 errors"},
		{"an unknown status is an error", []string{"weird"}, "0/1 cases (0%) · 0 passed · 0 failed · 1 errors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(0, 0)}
			tr := progress.NewTracker(clk.now)
			tr.Add(caseWith("c", 0, 0, tc.statuses...))
			tr.Update(0, 1)
			if got := tr.Counts().String(); !strings.HasPrefix(got, tc.want+" ·") {
				t.Errorf("got %q, want prefix %q", got, tc.want)
			}
		})
	}
}

// TestPlainLines drives a run of 20 cases on a fake clock: a line at each
// tenth and one per interval between, with the counts, calls, dollars and
// an ETA from the rate since the first batch.
func TestPlainLines(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var out bytes.Buffer
	tr := progress.NewTracker(clk.now)
	p := progress.NewPlain(tr, &out, 30*time.Second)

	// Start-up: nothing done for 40s; the interval line says so.
	clk.advance(40 * time.Second)
	p.Tick()
	// First batch: 1 case (5%), no tenth passed yet but the 0% decile is new.
	tr.Add(caseWith("c1", 2, 0.01, results.StatusPassed))
	p.Update(1, 20)
	// Second case 10s later: 10%, with an ETA from 1 case per 10s.
	clk.advance(10 * time.Second)
	tr.Add(caseWith("c2", 3, 0.02, results.StatusFailed))
	p.Update(2, 20)
	// 5s later a tick: the interval is not up, no line.
	clk.advance(5 * time.Second)
	p.Tick()
	// 30s after the last line: an interval line, the ETA counting the
	// stall (40s since the first batch for 1 case: 18 left at 40s each).
	clk.advance(25 * time.Second)
	p.Tick()
	// Cases 3..20, 1s apart; lines only at 20%, 30%, … 100%. At 20%
	// (82s, 42s after the first batch for 3 cases) 16 left at 14s: 3m44s.
	for i := 3; i <= 20; i++ {
		clk.advance(time.Second)
		st := results.StatusPassed
		if i == 7 {
			st = results.StatusError
		}
		tr.Add(caseWith("c", 1, 0.001, st))
		p.Update(i, 20)
	}

	want := []string{
		"progress: 0 cases · 0 passed · 0 failed · 0 errors · 0 judge calls · $0.0000 · ETA -",
		"progress: 1/20 cases (5%) · 1 passed · 0 failed · 0 errors · 2 judge calls · $0.0100 · ETA -",
		"progress: 2/20 cases (10%) · 1 passed · 1 failed · 0 errors · 5 judge calls · $0.0300 · ETA 3m0s",
		"progress: 2/20 cases (10%) · 1 passed · 1 failed · 0 errors · 5 judge calls · $0.0300 · ETA 12m0s",
		"progress: 4/20 cases (20%) · 3 passed · 1 failed · 0 errors · 7 judge calls · $0.0320 · ETA 3m44s",
		"progress: 6/20 cases (30%) · 5 passed · 1 failed · 0 errors · 9 judge calls · $0.0340 · ETA 2m3s",
		"progress: 8/20 cases (40%) · 6 passed · 1 failed · 1 errors · 11 judge calls · $0.0360 · ETA 1m19s",
		"progress: 10/20 cases (50%) · 8 passed · 1 failed · 1 errors · 13 judge calls · $0.0380 · ETA 53s",
		"progress: 12/20 cases (60%) · 10 passed · 1 failed · 1 errors · 15 judge calls · $0.0400 · ETA 36s",
		"progress: 14/20 cases (70%) · 12 passed · 1 failed · 1 errors · 17 judge calls · $0.0420 · ETA 24s",
		"progress: 16/20 cases (80%) · 14 passed · 1 failed · 1 errors · 19 judge calls · $0.0440 · ETA 14s",
		"progress: 18/20 cases (90%) · 16 passed · 1 failed · 1 errors · 21 judge calls · $0.0460 · ETA 7s",
		"progress: 20/20 cases (100%) · 18 passed · 1 failed · 1 errors · 23 judge calls · $0.0480",
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}

// TestResumedCasesDoNotSpeedTheETA: a resumed run reports its earlier
// cases as done at once; the rate is measured from there.
func TestResumedCasesDoNotSpeedTheETA(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	tr := progress.NewTracker(clk.now)
	for range 50 {
		tr.Add(caseWith("old", 1, 0, results.StatusPassed))
	}
	tr.Update(50, 100) // the resumed cases and the first batch, at once
	clk.advance(10 * time.Second)
	tr.Add(caseWith("new", 1, 0, results.StatusPassed))
	tr.Update(51, 100)
	c := tr.Counts()
	if !c.HasETA || c.ETA != 490*time.Second {
		t.Errorf("ETA %v (known %v), want 8m10s: 49 cases left at 10s a case", c.ETA, c.HasETA)
	}
	if c.Passed != 51 || c.Calls != 51 {
		t.Errorf("counts %+v: want 51 passed, 51 calls (resumed cases included, as done is)", c)
	}
}

func TestBarDescribesTheSameCounts(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var out bytes.Buffer
	tr := progress.NewTracker(clk.now)
	b := progress.NewBar(tr, &out)
	tr.Add(caseWith("c1", 4, 0.5, results.StatusFailed))
	b.Update(1, 3)
	b.Finish()
	if !strings.Contains(out.String(), "0 passed · 1 failed · 0 errors · 4 judge calls · $0.5000") {
		t.Errorf("bar output has no counts:\n%q", out.String())
	}
}

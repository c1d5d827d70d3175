package report

import (
	"sort"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// Results walks a run's case results in file order, calling fn for each
// and stopping at fn's first error, which it returns; it may be walked
// more than once. The reports are built from it one case at a time, so
// their memory does not grow with the run (results.jsonl is read again
// for each walk rather than held).
type Results func(fn func(r *engine.CaseResult) error) error

// FileResults walks results.jsonl at path.
func FileResults(path string) Results {
	return func(fn func(r *engine.CaseResult) error) error { return engine.EachResult(path, fn) }
}

// fileOutcomes walks results.jsonl at path without the metrics' details
// (engine.EachOutcome): for the walks that count and choose, which never
// read them.
func fileOutcomes(path string) Results {
	return func(fn func(r *engine.CaseResult) error) error { return engine.EachOutcome(path, fn) }
}

// Slice walks results held in memory.
func Slice(cases []engine.CaseResult) Results {
	return func(fn func(r *engine.CaseResult) error) error {
		for i := range cases {
			if err := fn(&cases[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// selectForHTML returns the cases report.html shows in full, in file
// order: every case with a failure, error or skip first, then passing
// cases, up to limit in all. Two walks; it holds at most limit cases,
// their details capped.
func selectForHTML(each Results, limit int) ([]engine.CaseResult, error) {
	pick := htmlPicker{limit: limit}
	if err := each(func(c *engine.CaseResult) error { pick.add(c); return nil }); err != nil {
		return nil, err
	}
	return pick.collect(each)
}

// htmlPicker chooses report.html's cases from the results it is shown,
// one at a time, remembering at most 2×limit positions.
type htmlPicker struct {
	limit             int
	n                 int   // results seen
	notPassed, passed []int // their positions, up to limit each
}

func (p *htmlPicker) add(c *engine.CaseResult) {
	switch ok := allPassed(*c); {
	case !ok && len(p.notPassed) < p.limit:
		p.notPassed = append(p.notPassed, p.n)
	case ok && len(p.passed) < p.limit:
		p.passed = append(p.passed, p.n)
	}
	p.n++
}

// positions are the chosen results' positions, in file order.
func (p *htmlPicker) positions() []int {
	keep := append([]int(nil), p.notPassed...)
	if room := p.limit - len(keep); room > 0 {
		keep = append(keep, p.passed[:min(room, len(p.passed))]...)
	}
	sort.Ints(keep)
	return keep
}

// collect walks the results again for the chosen ones.
func (p *htmlPicker) collect(each Results) ([]engine.CaseResult, error) {
	keep := p.positions()
	out := make([]engine.CaseResult, 0, len(keep))
	i := 0
	err := each(func(c *engine.CaseResult) error {
		if len(out) < len(keep) && keep[len(out)] == i {
			out = append(out, shownCase(c))
		}
		i++
		return nil
	})
	return out, err
}

// collectFile is collect over results.jsonl at path, decoding only the
// chosen lines (at most limit of them, against every line for a walk).
func (p *htmlPicker) collectFile(path string) ([]engine.CaseResult, error) {
	keep := p.positions()
	out := make([]engine.CaseResult, 0, len(keep))
	err := engine.EachResultAt(path, keep, func(c *engine.CaseResult) error {
		out = append(out, shownCase(c))
		return nil
	})
	return out, err
}

// shownCase is a chosen result as report.html holds it: details capped.
func shownCase(c *engine.CaseResult) engine.CaseResult {
	for m := range c.Metrics {
		c.Metrics[m].Details = capDetails(c.Metrics[m].Kind, c.Metrics[m].Details)
	}
	return *c
}

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
// cases, up to limit in all (what forHTML picks from a slice). Two walks;
// it holds at most limit cases, their details capped.
func selectForHTML(each Results, limit int) ([]engine.CaseResult, error) {
	var notPassed, passed []int
	i := 0
	err := each(func(c *engine.CaseResult) error {
		switch {
		case !allPassed(*c) && len(notPassed) < limit:
			notPassed = append(notPassed, i)
		case allPassed(*c) && len(passed) < limit:
			passed = append(passed, i)
		}
		i++
		return nil
	})
	if err != nil {
		return nil, err
	}
	keep := notPassed
	if room := limit - len(keep); room > 0 {
		keep = append(keep, passed[:min(room, len(passed))]...)
	}
	sort.Ints(keep)
	out := make([]engine.CaseResult, 0, len(keep))
	i = 0
	err = each(func(c *engine.CaseResult) error {
		if len(out) < len(keep) && keep[len(out)] == i {
			for m := range c.Metrics {
				c.Metrics[m].Details = capDetails(c.Metrics[m].Kind, c.Metrics[m].Details)
			}
			out = append(out, *c)
		}
		i++
		return nil
	})
	return out, err
}

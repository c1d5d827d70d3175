package report

import (
	"slices"

	"github.com/agentanvil/anvil/host/internal/results"
)

// htmlPicker chooses report.html's cases from the results it is shown, one
// at a time, in results order: every case with a failure, error or skip
// first, then passing cases, up to limit in all. It holds the chosen
// cases, their details capped, never more than limit of them: the
// failing ones are final as they come, and a passing one is kept only
// while there is room beside them (the room only shrinks).
type htmlPicker struct {
	limit             int
	n                 int          // results seen
	notPassed, passed []pickedCase // chosen, in results order
}

type pickedCase struct {
	pos int // in results order
	c   results.CaseResult
}

func (p *htmlPicker) add(c *results.CaseResult) {
	pos := p.n
	p.n++
	if !allPassed(c) {
		if len(p.notPassed) == p.limit {
			return
		}
		p.notPassed = append(p.notPassed, pickedCase{pos, shownCase(c)})
		if room := p.limit - len(p.notPassed); len(p.passed) > room {
			clear(p.passed[room:])
			p.passed = p.passed[:room]
		}
		return
	}
	if len(p.passed) < p.limit-len(p.notPassed) {
		p.passed = append(p.passed, pickedCase{pos, shownCase(c)})
	}
}

// shown is the chosen cases in results order.
func (p *htmlPicker) shown() []results.CaseResult {
	all := append(slices.Clone(p.notPassed), p.passed...)
	slices.SortFunc(all, func(a, b pickedCase) int { return a.pos - b.pos })
	out := make([]results.CaseResult, len(all))
	for i := range all {
		out[i] = all[i].c
	}
	return out
}

func allPassed(c *results.CaseResult) bool {
	for _, m := range c.Metrics {
		if m.Status != results.StatusPassed {
			return false
		}
	}
	return true
}

// shownCase is a chosen result as report.html holds it: its own copy of
// the metrics, details capped, and the case trimmed to what the page
// shows (a result read from results.jsonl has no case: Builder.Write
// reads it from cases/).
func shownCase(c *results.CaseResult) results.CaseResult {
	out := *c
	out.Metrics = slices.Clone(c.Metrics)
	for m := range out.Metrics {
		out.Metrics[m].Details = capDetails(out.Metrics[m].Kind, out.Metrics[m].Details)
	}
	if c.Case != nil {
		out.Case = trimCase(c.Case)
	}
	return out
}

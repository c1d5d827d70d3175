package report

import (
	"fmt"
	"os"
	"slices"

	"github.com/agentanvil/anvil/host/internal/results"
)

// htmlPicker chooses report.html's cases from the results it is shown, one
// at a time, in results order: every case with a failure, error or skip
// first, then passing cases, up to limit in all. A chosen case, as the
// page shows it, goes to a spill file, so what it holds in memory is a
// position per chosen case, never more than limit of them: the failing
// ones are final as they come, and a passing one is kept only while there
// is room beside them (the room only shrinks).
type htmlPicker struct {
	limit             int
	spill             *spill
	f                 *os.File // the chosen cases, one after another
	size              int64    // bytes in f
	n                 int      // results seen
	nNotPassed        int      // of which not all passed
	notPassed, passed []picked // chosen, in results order
	err               error    // the first error; nothing is added after it
}

// picked is a chosen case: its position in the results and its record in
// the spill file.
type picked struct {
	pos  int
	off  int64
	size int
}

func (p *htmlPicker) add(c *results.CaseResult) {
	pos := p.n
	p.n++
	if p.err != nil {
		return
	}
	if !allPassed(c) {
		p.nNotPassed++
		if len(p.notPassed) == p.limit {
			return
		}
		if p.hold(&p.notPassed, pos, c) {
			if room := p.limit - len(p.notPassed); len(p.passed) > room {
				p.passed = p.passed[:room]
			}
		}
		return
	}
	if len(p.passed) < p.limit-len(p.notPassed) {
		p.hold(&p.passed, pos, c)
	}
}

// hold writes the case as the page shows it to the spill file and appends
// its place to list.
func (p *htmlPicker) hold(list *[]picked, pos int, c *results.CaseResult) bool {
	shown := shownCase(c)
	b, err := results.Encode(&shown)
	if err == nil && p.f == nil {
		p.f, err = p.spill.create("cases-*.jsonl")
	}
	if err == nil {
		_, err = p.f.Write(b)
	}
	if err != nil {
		p.err = fmt.Errorf("write report.html: hold case %q: %w", c.CaseID, err)
		return false
	}
	*list = append(*list, picked{pos: pos, off: p.size, size: len(b)})
	p.size += int64(len(b))
	return true
}

// shown is the chosen cases in results order.
func (p *htmlPicker) shown() ([]results.CaseResult, error) {
	if p.err != nil {
		return nil, p.err
	}
	all := append(slices.Clone(p.notPassed), p.passed...)
	slices.SortFunc(all, func(a, b picked) int { return a.pos - b.pos })
	out := make([]results.CaseResult, len(all))
	var buf []byte
	for i, k := range all {
		buf = slices.Grow(buf[:0], k.size)[:k.size]
		if _, err := p.f.ReadAt(buf, k.off); err != nil {
			return nil, fmt.Errorf("write report.html: read a case back: %w", err)
		}
		if err := results.DecodeLine(buf, &out[i]); err != nil {
			return nil, fmt.Errorf("write report.html: read a case back: %w", err)
		}
	}
	return out, nil
}

func allPassed(c *results.CaseResult) bool {
	for _, m := range c.Metrics {
		if m.Status != results.StatusPassed {
			return false
		}
	}
	return true
}

// shownCase is a chosen result as report.html holds it: details capped,
// and the case trimmed to what the page shows (a result read from
// results.jsonl has no case: Builder.Write reads it from cases/).
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

// leftOut is what the page holds of the results seen, nil when all.
func (p *htmlPicker) leftOut() *leftOut {
	shown := len(p.notPassed) + len(p.passed)
	if p.n <= shown {
		return nil
	}
	np := p.nNotPassed - len(p.notPassed)
	return &leftOut{Shown: shown, Total: p.n, NotPassing: np, Passing: p.n - shown - np}
}

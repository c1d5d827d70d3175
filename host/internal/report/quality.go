package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

// TableOptions style the terminal table.
type TableOptions struct {
	// Color paints the gate column and the run's verdict (green PASS / ok,
	// red FAIL / UNVERIFIED): for a terminal, never for a pipe or a file.
	Color bool
}

// ANSI SGR colours, reset after every painted word.
const (
	ansiGreen  = "\x1b[32m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// paint colours word by the verdict class gate or the summary gives it.
func (o TableOptions) paint(word, class string) string {
	if !o.Color {
		return word
	}
	switch class {
	case "passed":
		return ansiGreen + word + ansiReset
	case "failed":
		return ansiRed + word + ansiReset
	case "incomplete":
		return ansiYellow + word + ansiReset
	}
	return word
}

func verdictClass(v string) string {
	switch v {
	case results.VerdictPassed:
		return "passed"
	case results.VerdictFailed, results.VerdictUnverified:
		return "failed"
	case results.VerdictIncomplete:
		return "incomplete"
	}
	return ""
}

// maxFailingShown is how many failing case ids the table names per metric.
const maxFailingShown = 5

// qualityLines writes, per metric, its mean and pass rate with their
// intervals, the spread of its samples and its panel's agreement, and the
// first cases that failed it.
func qualityLines(w io.Writer, s *results.Summary) {
	for _, m := range s.Metrics {
		var parts []string
		if m.MeanCI != nil {
			parts = append(parts, "mean "+ciText(m.MeanCI, "%.3f", 1))
		}
		if m.PassRateCI != nil {
			parts = append(parts, "pass rate "+ciText(m.PassRateCI, "%.1f%%", 100))
		}
		if m.Sampled > 0 && m.FlipShare != nil {
			flips := int(*m.FlipShare*float64(m.Sampled) + 0.5)
			p := fmt.Sprintf("flips %d of %d sampled cases", flips, m.Sampled)
			if m.FlipShareCI != nil {
				p += " " + ciText(m.FlipShareCI, "%.1f%%", 100)
			}
			p += fmt.Sprintf(", sample sd mean %.3f max %.3f", *m.MeanSampleSD, *m.MaxSampleSD)
			parts = append(parts, p)
		}
		if ds := m.DAGSamples; ds != nil {
			parts = append(parts, dagSamplesLine(ds))
		}
		if pa := m.Panel; pa != nil && pa.MeanAbsDiff != nil {
			p := fmt.Sprintf("panel %s (%s): mean |diff| %.3f, verdicts agree on %.1f%% of %d cases",
				strings.Join(pa.Judges, ", "), pa.Aggregate, *pa.MeanAbsDiff, *pa.VerdictAgreement*100, pa.Cases)
			if pa.Alpha != nil {
				p += fmt.Sprintf(", Krippendorff α %.3f", *pa.Alpha)
			}
			parts = append(parts, p)
		}
		if c := m.Cascade; c != nil {
			parts = append(parts, cascadeLine(c))
		}
		if a := m.AdaptiveSamples; a != nil {
			parts = append(parts, fmt.Sprintf("adaptive samples %.2f per case (%d–%d)", a.Mean, a.Min, a.Max))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "%s: %s\n", m.Metric, strings.Join(parts, " · "))
		}
	}
	for _, m := range s.Metrics {
		if len(m.FailedCases) == 0 {
			continue
		}
		shown := m.FailedCases[:min(len(m.FailedCases), maxFailingShown)]
		line := fmt.Sprintf("failing %s: %s", m.Metric, strings.Join(quoteIDs(shown), ", "))
		if more := m.Failed - len(shown); more > 0 {
			line += fmt.Sprintf(" (+%d more)", more)
		}
		fmt.Fprintln(w, line)
	}
}

// cascadeLine is a judge cascade's escalations and what it saved.
func cascadeLine(c *results.CascadeSummary) string {
	judges := make([]string, 0, len(c.DecidedBy))
	for j := range c.DecidedBy {
		judges = append(judges, j)
	}
	sort.Strings(judges)
	by := make([]string, len(judges))
	for i, j := range judges {
		by[i] = fmt.Sprintf("%s %d", j, c.DecidedBy[j])
	}
	return fmt.Sprintf("cascade escalated %d of %d cases (%.1f%%; decided by %s), $%.4f against $%.4f for the last judge alone",
		c.Escalated, c.Cases, 100*c.EscalationShare, strings.Join(by, ", "), c.USD, c.StrongOnlyUSD)
}

// ciText is "0.597 [0.210, 0.790]" for a 95% interval, value scaled by
// scale and printed with format.
func ciText(ci *stats.CI, format string, scale float64) string {
	f := func(v float64) string { return fmt.Sprintf(format, v*scale) }
	return fmt.Sprintf("%s [%s, %s]", f(ci.Estimate), f(ci.Low), f(ci.High))
}

// quoteIDs makes case ids safe to print on one terminal line: a case id
// comes from the dataset and may hold control characters or escape
// sequences, which are quoted Go-style; a plain id is printed as is.
func quoteIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		q := strconv.QuoteToGraphic(id)
		if q[1:len(q)-1] == id {
			q = id
		}
		out[i] = q
	}
	return out
}

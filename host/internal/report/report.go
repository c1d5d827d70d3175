// Package report turns a run's summary and results into what people and
// CI systems read: a fixed-width table for the terminal, junit.xml for CI
// and report.html for people.
//
// Invariants: output is deterministic for a given summary and results
// (metrics in configuration order, cases in results order), so reports
// diff cleanly; the reports are built from the cases one at a time
// (Builder), holding a bounded amount of them, so a run of any size is
// reported in bounded memory and without reading results.jsonl back.
package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentanvil/anvil/host/internal/results"
)

// Table writes the end-of-run summary table, without colour.
func Table(w io.Writer, s *results.Summary) error { return TableWith(w, s, TableOptions{}) }

// WithoutJudgeNotes is text, a reason printed after the judges' notes
// ("judge NAME: NOTE"), with each note it quotes replaced by a reference
// to that line: a judge without a key is the reason of every metric it
// skips, and its whole advice once is enough. summary.json keeps the
// reasons whole.
func WithoutJudgeNotes(s *results.Summary, text string) string {
	for _, j := range s.Judges {
		if j.Note != "" {
			text = strings.ReplaceAll(text, j.Note, "judge "+strconv.Quote(j.Name)+" is "+j.Source+", see \"judge "+j.Name+":\" above")
		}
	}
	return text
}

// TableWith writes the end-of-run summary table styled by o: the metrics,
// then per metric its intervals, spread, panel agreement and first
// failing cases, then notes and the run's verdict.
func TableWith(w io.Writer, s *results.Summary, o TableOptions) error {
	for _, j := range s.Judges {
		if j.Note != "" {
			fmt.Fprintf(w, "judge %s: %s\n", j.Name, j.Note)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tKIND\tN\tMEAN\tP50\tPASS RATE\tTHRESH\tPASS\tFAIL\tERR\tSKIP\tMODES\tCALLS\tTOKENS\tCACHED\tUSD\tUSD/CASE\tGATE")
	for _, m := range s.Metrics {
		// GATE is the last column: its colour codes do not shift the
		// alignment of the columns before it.
		label, class := gate(m)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%.2f\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n",
			m.Metric, m.Kind, m.N, num(m.Mean), num(m.P50), pct(m.PassRate), m.Threshold,
			m.Passed, m.Failed, m.Errors, m.Skipped, modes(m.ScoreModes),
			m.Judge.Calls, m.Judge.InputTokens+m.Judge.OutputTokens, pct(m.CachedInputShare), metricUSD(m),
			perCase(m.USDPerVerifiedCase), o.paint(label, class))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	qualityLines(w, s)
	for _, m := range s.Metrics {
		if m.Skipped > 0 {
			fmt.Fprintf(w, "note: %s: %d of %d skipped: %s\n", m.Metric, m.Skipped, m.N, WithoutJudgeNotes(s, m.SkipReason))
		}
	}
	for _, why := range s.Unverified {
		fmt.Fprintf(w, "UNVERIFIED: %s\n", WithoutJudgeNotes(s, why))
	}
	if u := s.Judge.UsageUnknown; u > 0 {
		fmt.Fprintf(w, "note: %d judge request(s) had no usage in the reply: their tokens and USD are estimated from the text\n", u)
	}
	for _, why := range s.Unpriced {
		fmt.Fprintf(w, "note: no USD for %s\n", why)
	}
	if c := s.Cache; c != nil {
		if c.Error != "" {
			fmt.Fprintf(w, "note: cache: %s\n", c.Error)
		}
		if c.Unreadable > 0 {
			fmt.Fprintf(w, "note: cache: %d unreadable entr(ies) were treated as misses and called again; `anvil-host cache clear` resets the cache\n", c.Unreadable)
		}
	}
	if r := s.Resume; r != nil && r.TornLineBytes > 0 {
		fmt.Fprintf(w, "note: resume: dropped a torn last line of results.jsonl (%d bytes); that case was evaluated again\n", r.TornLineBytes)
	}
	_, err := fmt.Fprintf(w, "\n%d cases · %d judge calls (%d requests, %s%d HTTP attempts) · %d tokens · %s · judge errors %d · plugin errors %d · metric errors %d · %s\n",
		s.Cases, s.Judge.Calls, s.Judge.Requests, answeredWithoutCalls(s.Judge), s.Judge.Attempts,
		s.Judge.InputTokens+s.Judge.OutputTokens, runUSD(s),
		s.JudgeErrors, s.PluginErrors, s.MetricErrors, o.paint(strings.ToUpper(s.Verdict), verdictClass(s.Verdict)))
	return err
}

// answeredWithoutCalls says how many requests the cache and a recorded
// session answered: a replayed recording is not a cache hit, and a run
// that only replayed must not read as cached.
func answeredWithoutCalls(u results.JudgeUsage) string {
	var out string
	if u.CacheHits > 0 || u.Replayed == 0 {
		out = fmt.Sprintf("%d cached, ", u.CacheHits)
	}
	if u.Replayed > 0 {
		out += fmt.Sprintf("%d replayed, ", u.Replayed)
	}
	return out
}

func num(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *v)
}

func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *v*100)
}

func usd(v float64) string { return fmt.Sprintf("$%.4f", v) }

// metricUSD is a metric's USD, marked "+" when some of its calls had no
// price (it is then a lower bound).
func metricUSD(m results.MetricSummary) string {
	if m.Judge.Unpriced > 0 {
		return usd(m.Judge.USD) + "+"
	}
	return usd(m.Judge.USD)
}

// runUSD is the run's USD with its cached share, marked as metricUSD does.
func runUSD(s *results.Summary) string {
	out := usd(s.Judge.USD)
	if s.Judge.Unpriced > 0 {
		out += "+ (some calls unpriced)"
	}
	if c := s.CachedInputShare; c != nil && s.Judge.CachedInputTokens > 0 {
		out += fmt.Sprintf(" · %.1f%% of input cached", *c*100)
	}
	return out
}

// perCase is a USD per verified case, to six decimals (a cheap judge's
// is a fraction of a cent).
func perCase(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("$%.6f", *v)
}

func modes(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range []string{"weighted", "raw", "sampled"} {
		if n := m[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", k, n))
		}
	}
	return strings.Join(parts, ",")
}

// JUnit XML, in the shape Jenkins, GitLab and GitHub reporters read: one
// testsuite per metric, one testcase per case (junit.go).
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      junitSeconds  `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	Output    string        `xml:"system-out,omitempty"`
}

// junitSeconds is a testcase's time in seconds, written as a plain
// decimal: JUnit's schema types time as xs:decimal, and encoding/xml's
// float format ('g') writes a short run's "2e-06", which readers that
// follow the schema refuse. Fixed microseconds: the shortest 'f' would
// write the noise of dividing milliseconds by 1000 (0.00000010000000000000001).
type junitSeconds float64

func (s junitSeconds) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: strconv.FormatFloat(float64(s), 'f', 6, 64)}, nil
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit writes junit.xml's document for the case results of a run held in
// memory; its testcases are spilled under the system's temporary
// directory as a run's are under its output directory.
func JUnit(w io.Writer, s *results.Summary, cases []results.CaseResult) error {
	dir, err := os.MkdirTemp("", "anvil-junit-")
	if err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	defer os.RemoveAll(dir)
	sp := &spill{parent: dir}
	defer sp.remove()
	j := newJUnitBuilder(sp)
	for i := range cases {
		j.add(&cases[i])
	}
	return j.write(w, s)
}

// Package report turns a run's summary into what people and CI systems
// read: a fixed-width table for the terminal and JUnit XML for CI.
//
// Invariants: output is deterministic for a given summary (metrics in
// configuration order, cases in results order), so reports diff cleanly.
package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentanvil/anvil/host/internal/engine"
)

// Table writes the end-of-run summary table, without colour.
func Table(w io.Writer, s *engine.Summary) error { return TableWith(w, s, TableOptions{}) }

// WithoutJudgeNotes is text, a reason printed after the judges' notes
// ("judge NAME: NOTE"), with each note it quotes replaced by a reference
// to that line: a judge without a key is the reason of every metric it
// skips, and its whole advice once is enough. summary.json keeps the
// reasons whole.
func WithoutJudgeNotes(s *engine.Summary, text string) string {
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
func TableWith(w io.Writer, s *engine.Summary, o TableOptions) error {
	for _, j := range s.Judges {
		if j.Note != "" {
			fmt.Fprintf(w, "judge %s: %s\n", j.Name, j.Note)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tKIND\tN\tMEAN\tP50\tPASS RATE\tTHRESH\tPASS\tFAIL\tERR\tSKIP\tMODES\tCALLS\tTOKENS\tUSD\tGATE")
	for _, m := range s.Metrics {
		// GATE is the last column: its colour codes do not shift the
		// alignment of the columns before it.
		label, class := gate(m)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%.2f\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\n",
			m.Metric, m.Kind, m.N, num(m.Mean), num(m.P50), pct(m.PassRate), m.Threshold,
			m.Passed, m.Failed, m.Errors, m.Skipped, modes(m.ScoreModes),
			m.Judge.Calls, m.Judge.InputTokens+m.Judge.OutputTokens, usd(m.Judge.USD), o.paint(label, class))
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
		s.Judge.InputTokens+s.Judge.OutputTokens, usd(s.Judge.USD),
		s.JudgeErrors, s.PluginErrors, s.MetricErrors, o.paint(strings.ToUpper(s.Verdict), verdictClass(s.Verdict)))
	return err
}

// answeredWithoutCalls says how many requests the cache and a recorded
// session answered: a replayed recording is not a cache hit, and a run
// that only replayed must not read as cached.
func answeredWithoutCalls(u engine.JudgeUsage) string {
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
// testsuite per metric, one testcase per case. writeJUnit (junitxml.go)
// writes these by hand; the tags are what the tests' encoding/xml
// reference encodes them by.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

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

// JUnit writes the XML for the case results of a run.
func JUnit(w io.Writer, s *engine.Summary, cases []engine.CaseResult) error {
	return JUnitFrom(w, s, Slice(cases))
}

// JUnitFrom is JUnit over results read by each, which it walks once per
// metric plus once to count: only one case is held at a time, so the
// memory it needs does not grow with the run.
func JUnitFrom(w io.Writer, s *engine.Summary, each Results) error {
	counts := newJUnitCounts(s)
	if err := each(func(c *engine.CaseResult) error { counts.add(c); return nil }); err != nil {
		return err
	}
	return writeJUnit(w, counts, each)
}

// junitCounts gathers every suite's counts (the attributes written before
// its cases) from the results it is shown, one at a time.
type junitCounts struct {
	s    *engine.Summary
	root junitSuites
	idx  map[string]int // metric → its suite
}

func newJUnitCounts(s *engine.Summary) *junitCounts {
	c := &junitCounts{s: s, root: junitSuites{Name: "anvil"}, idx: map[string]int{}}
	for _, m := range s.Metrics {
		c.idx[m.Metric] = len(c.root.Suites)
		c.root.Suites = append(c.root.Suites, junitSuite{Name: m.Metric})
	}
	return c
}

func (c *junitCounts) add(cr *engine.CaseResult) {
	for k := range cr.Metrics {
		mr := &cr.Metrics[k]
		i, ok := c.idx[mr.Metric]
		if !ok {
			continue
		}
		suite := &c.root.Suites[i]
		switch junitOutcome(mr) {
		case engine.StatusFailed:
			suite.Failures++
		case engine.StatusError:
			suite.Errors++
		case engine.StatusSkipped:
			suite.Skipped++
		}
		suite.Tests++
	}
}

// finish adds the unverified gates and the totals. A suite's Cases hold
// only its unverified-gate entry, written after its cases.
func (c *junitCounts) finish() (junitSuites, map[string]int) {
	root := c.root
	root.Suites = append([]junitSuite(nil), c.root.Suites...)
	// A gate that verified nothing is an error CI must see: a suite of
	// skips reads as green in most CI systems.
	for _, m := range c.s.Metrics {
		if m.Verdict != engine.VerdictUnverified {
			continue
		}
		suite := &root.Suites[c.idx[m.Metric]]
		suite.Cases = append(suite.Cases, junitCase{Name: "(gate)", Classname: "anvil." + m.Metric,
			Error: &junitMessage{Message: "could not verify: " + m.UnverifiedReason, Type: "unverified"}})
		suite.Tests++
		suite.Errors++
	}
	for _, su := range root.Suites {
		root.Tests += su.Tests
		root.Failures += su.Failures
		root.Errors += su.Errors
		root.Skipped += su.Skipped
	}
	return root, c.idx
}

// junitOutcome is the JUnit count a metric result adds to ("" for none:
// passed, or failed but not gated).
func junitOutcome(mr *engine.MetricResult) string {
	switch mr.Status {
	case engine.StatusFailed:
		if mr.Gated {
			return engine.StatusFailed
		}
	case engine.StatusError, engine.StatusSkipped:
		return mr.Status
	}
	return ""
}

// junitCaseOf is one metric result as a testcase, its element the one of
// its junitOutcome. The numbers are strconv's, not fmt's (the same digits,
// fewer allocations per testcase); the concatenations allocate once each.
func junitCaseOf(caseID string, mr *engine.MetricResult) junitCase {
	tc := junitCase{Name: caseID, Classname: "anvil." + mr.Metric, Time: junitSeconds(mr.LatencyMS / 1000)}
	var scoreBuf, thresholdBuf [32]byte
	score := append(scoreBuf[:0], '-')
	if mr.Score != nil {
		score = strconv.AppendFloat(scoreBuf[:0], *mr.Score, 'f', 3, 64)
	}
	threshold := strconv.AppendFloat(thresholdBuf[:0], mr.Threshold, 'f', 2, 64)
	tc.Output = "score=" + string(score) + " threshold=" + string(threshold) + " mode=" + mr.ScoreMode + "\n" + mr.Reason
	switch junitOutcome(mr) {
	case engine.StatusFailed:
		tc.Failure = &junitMessage{Message: "score " + string(score) + " below threshold " + string(threshold), Type: "threshold", Text: mr.Reason}
	case engine.StatusError:
		msg := "error"
		if mr.Error != nil {
			msg = mr.Error.Error()
		}
		tc.Error = &junitMessage{Message: msg, Type: mr.ErrorClass}
	case engine.StatusSkipped:
		tc.Skipped = &junitMessage{Message: mr.Reason}
	}
	return tc
}

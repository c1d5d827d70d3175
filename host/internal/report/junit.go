package report

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/agentanvil/anvil/host/internal/results"
)

// junit.xml is one testsuite per metric, one testcase per case, written by
// encoding/xml. Its counts come first in the document and its testcases
// are known one case at a time, so each suite's testcases are encoded as
// the cases arrive into a file of their own (a spill), and the document
// is the counts with each spill copied in after its suite's start tag:
// memory is a buffer per suite, whatever the number of cases.

// junitBuilder gathers junit.xml's suites as cases are added.
type junitBuilder struct {
	spill  *spill
	suites map[string]*junitSpill
	err    error // the first error; the builder then adds nothing more
}

// junitSpill is one suite so far: its counts and its testcases' file.
type junitSpill struct {
	tests, failures, errors, skipped int
	f                                *os.File
	w                                *bufio.Writer
	enc                              *xml.Encoder
	cases                            int
}

var testcaseStart = xml.StartElement{Name: xml.Name{Local: "testcase"}}

// spillBuffer is what a suite holds of its testcases before they go to
// its spill file.
const spillBuffer = 32 << 10

func newJUnitBuilder(sp *spill) *junitBuilder {
	return &junitBuilder{spill: sp, suites: map[string]*junitSpill{}}
}

// add counts and spills the testcases of one case.
func (j *junitBuilder) add(c *results.CaseResult) {
	for k := range c.Metrics {
		mr := &c.Metrics[k]
		su, err := j.suite(mr.Metric)
		if err != nil {
			return
		}
		su.tests++
		switch junitOutcome(mr) {
		case results.StatusFailed:
			su.failures++
		case results.StatusError:
			su.errors++
		case results.StatusSkipped:
			su.skipped++
		}
		j.encode(su, junitCaseOf(c.CaseID, mr))
	}
}

// suite is metric's suite, its spill file created on first use.
func (j *junitBuilder) suite(metric string) (*junitSpill, error) {
	if j.err != nil {
		return nil, j.err
	}
	if su := j.suites[metric]; su != nil {
		return su, nil
	}
	f, err := j.spill.create("suite-*.xml")
	if err != nil {
		j.err = fmt.Errorf("write junit: %w", err)
		return nil, j.err
	}
	su := &junitSpill{f: f, w: bufio.NewWriterSize(f, spillBuffer)}
	// The encoder gets the buffer hidden behind a struct: handed a
	// *bufio.Writer it would write into it and flush it to the file after
	// every testcase. The indentation is the testcases' inside the
	// document: each on a line of its own, four spaces in.
	su.enc = xml.NewEncoder(struct{ io.Writer }{su.w})
	su.enc.Indent("    ", "  ")
	j.suites[metric] = su
	return su, nil
}

// encode spills one testcase.
func (j *junitBuilder) encode(su *junitSpill, tc junitCase) {
	if j.err != nil {
		return
	}
	if err := su.enc.EncodeElement(tc, testcaseStart); err != nil {
		j.err = fmt.Errorf("write junit: %w", err)
		return
	}
	su.cases++
}

// write writes the document for summary s: a suite per metric of s, in
// its order (cases of other metrics are left out), each with an unverified
// gate's testcase after its cases.
func (j *junitBuilder) write(w io.Writer, s *results.Summary) error {
	// A gate that verified nothing is an error CI must see: a suite of
	// skips reads as green in most CI systems.
	for _, m := range s.Metrics {
		if m.Verdict != results.VerdictUnverified {
			continue
		}
		su, err := j.suite(m.Metric)
		if err != nil {
			return err
		}
		su.tests++
		su.errors++
		j.encode(su, junitCase{Name: "(gate)", Classname: "anvil." + m.Metric,
			Error: &junitMessage{Message: "could not verify: " + m.UnverifiedReason, Type: "unverified"}})
	}
	if j.err != nil {
		return j.err
	}
	var root junitSpill
	for _, m := range s.Metrics {
		if su := j.suites[m.Metric]; su != nil {
			root.tests += su.tests
			root.failures += su.failures
			root.errors += su.errors
			root.skipped += su.skipped
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	// The encoder gets w hidden behind a struct: handed a *bufio.Writer it
	// would write into it and flush it after every token.
	enc := xml.NewEncoder(struct{ io.Writer }{w})
	enc.Indent("", "  ")
	rootStart := suiteStart("testsuites", "anvil", &root)
	if err := enc.EncodeToken(rootStart); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	for _, m := range s.Metrics {
		su := j.suites[m.Metric]
		if su == nil {
			su = &junitSpill{}
		}
		start := suiteStart("testsuite", m.Metric, su)
		if err := enc.EncodeToken(start); err != nil {
			return fmt.Errorf("write junit: %w", err)
		}
		if su.cases > 0 {
			// The suite's testcases between its tags, as the encoder
			// would lay them out: each on its own line, the end tag on
			// the next.
			if err := enc.Flush(); err != nil {
				return fmt.Errorf("write junit: %w", err)
			}
			if err := su.copyTo(w); err != nil {
				return err
			}
		}
		if err := enc.EncodeToken(start.End()); err != nil {
			return fmt.Errorf("write junit: %w", err)
		}
	}
	if err := enc.EncodeToken(rootStart.End()); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if err := enc.Flush(); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

// copyTo writes the suite's testcases to w, framed by the newlines and
// indentation the document's encoder would have put around them.
func (su *junitSpill) copyTo(w io.Writer) error {
	if err := su.enc.Flush(); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if err := su.w.Flush(); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := su.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.Copy(w, su.f); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n  "); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

func suiteStart(tag, name string, su *junitSpill) xml.StartElement {
	attr := func(name, value string) xml.Attr { return xml.Attr{Name: xml.Name{Local: name}, Value: value} }
	return xml.StartElement{Name: xml.Name{Local: tag}, Attr: []xml.Attr{
		attr("name", name), attr("tests", strconv.Itoa(su.tests)), attr("failures", strconv.Itoa(su.failures)),
		attr("errors", strconv.Itoa(su.errors)), attr("skipped", strconv.Itoa(su.skipped))}}
}

// junitOutcome is the JUnit count a metric result adds to ("" for none:
// passed, or failed but not gated).
func junitOutcome(mr *results.MetricResult) string {
	switch mr.Status {
	case results.StatusFailed:
		if mr.Gated {
			return results.StatusFailed
		}
	case results.StatusError, results.StatusSkipped:
		return mr.Status
	}
	return ""
}

// junitCaseOf is one metric result as a testcase, its element the one of
// its junitOutcome.
func junitCaseOf(caseID string, mr *results.MetricResult) junitCase {
	tc := junitCase{Name: caseID, Classname: "anvil." + mr.Metric, Time: junitSeconds(mr.LatencyMS / 1000)}
	score := "-"
	if mr.Score != nil {
		score = fmt.Sprintf("%.3f", *mr.Score)
	}
	tc.Output = fmt.Sprintf("score=%s threshold=%.2f mode=%s\n%s", score, mr.Threshold, mr.ScoreMode, mr.Reason)
	switch junitOutcome(mr) {
	case results.StatusFailed:
		tc.Failure = &junitMessage{Message: fmt.Sprintf("score %s below threshold %.2f", score, mr.Threshold), Type: "threshold", Text: mr.Reason}
	case results.StatusError:
		msg := "error"
		if mr.Error != nil {
			msg = mr.Error.Error()
		}
		tc.Error = &junitMessage{Message: msg, Type: mr.ErrorClass}
	case results.StatusSkipped:
		tc.Skipped = &junitMessage{Message: mr.Reason}
	}
	return tc
}

package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/cputime"
	"github.com/agentanvil/anvil/host/internal/engine"
)

// junitRun is a run of n cases over three metrics: a gated one that
// passes, fails and errors, an ungated one that fails and skips, and a
// gated one that verified nothing (its gate is an extra testcase).
func junitRun(n int) (*engine.Summary, []engine.CaseResult) {
	s := &engine.Summary{Cases: n, Metrics: []engine.MetricSummary{
		{Metric: "correctness", Kind: "geval", Gated: true, Verdict: engine.VerdictFailed, Threshold: 0.6, N: n},
		{Metric: "exact <&>", Kind: "exact_match", Verdict: engine.VerdictInformational, Threshold: 0.5, N: n},
		{Metric: "faith", Kind: "geval", Gated: true, Verdict: engine.VerdictUnverified, N: n,
			UnverifiedReason: "scored no case: all skipped (\"no key\")\n"},
	}}
	cases := make([]engine.CaseResult, n)
	for i := range cases {
		score := float64(i%10) / 10
		c := &cases[i]
		c.CaseID = fmt.Sprintf("case-%06d", i)
		gated := engine.MetricResult{Metric: "correctness", Status: engine.StatusPassed, Gated: true, Score: &score, Threshold: 0.6,
			ScoreMode: "weighted", LatencyMS: 100.601 + float64(i), Reason: "The output answers the input & says \"why\".\n\tIt is <fine>."}
		switch i % 7 {
		case 1:
			gated.Status = engine.StatusFailed
		case 2:
			gated.Status, gated.Score, gated.ErrorClass = engine.StatusError, nil, "judge"
			gated.Error = abi.Errorf(abi.CodeJudge, "judge: 503 from the server\r\n")
		case 3:
			gated.Status, gated.Score, gated.Reason = engine.StatusSkipped, nil, "case has no expected_output"
		}
		info := engine.MetricResult{Metric: "exact <&>", Status: engine.StatusFailed, Score: &score, Threshold: 0.5, LatencyMS: 0.004}
		if i%2 == 0 {
			info.Status, info.Score = engine.StatusSkipped, nil
		}
		c.Metrics = []engine.MetricResult{gated, info,
			{Metric: "faith", Status: engine.StatusSkipped, Gated: true, Reason: "no key \xff\x01"},
			{Metric: "not in the summary", Status: engine.StatusFailed, Gated: true}}
	}
	return s, cases
}

// countingWriter counts the writes that reach it: the file's write(2)s.
type countingWriter struct{ writes, bytes int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.bytes += len(p)
	return len(p), nil
}

// TestJUnitWritesInBufferSizedPieces: junit.xml reaches its file in
// writes of the file buffer's size, not one per testcase (an
// xml.Encoder flushes a *bufio.Writer it is given after each element).
func TestJUnitWritesInBufferSizedPieces(t *testing.T) {
	const n = 1000
	s, cases := junitRun(n)
	counts := newJUnitCounts(s)
	for i := range cases {
		counts.add(&cases[i])
	}
	var file countingWriter
	bw := newFileBuffer(&file)
	if err := writeJUnit(bw, counts, Slice(cases)); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := file.bytes/bw.Size() + 1
	t.Logf("%d testcases, %d bytes in %d writes", 3*n+1, file.bytes, file.writes)
	if file.writes > want {
		t.Fatalf("%d bytes of junit.xml took %d writes; a %d-byte buffer needs %d", file.bytes, file.writes, bw.Size(), want)
	}
}

// writeJUnitReference is writeJUnit as it was, through encoding/xml: the
// bytes writeJUnit must write.
func writeJUnitReference(w io.Writer, counts *junitCounts, each Results) error {
	root, idx := counts.finish()
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	// Element by element through one encoder, so the indentation is what
	// encoding the whole tree at once gave. The encoder gets w hidden
	// behind a struct: handed a *bufio.Writer it would write into it
	// directly and flush it after every element, one write(2) per case.
	enc := xml.NewEncoder(struct{ io.Writer }{w})
	enc.Indent("", "  ")
	rootStart := xml.StartElement{Name: xml.Name{Local: "testsuites"}, Attr: []xml.Attr{
		attr("name", root.Name), intAttr("tests", root.Tests), intAttr("failures", root.Failures),
		intAttr("errors", root.Errors), intAttr("skipped", root.Skipped)}}
	if err := enc.EncodeToken(rootStart); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	caseStart := xml.StartElement{Name: xml.Name{Local: "testcase"}}
	for i, su := range root.Suites {
		start := xml.StartElement{Name: xml.Name{Local: "testsuite"}, Attr: []xml.Attr{
			attr("name", su.Name), intAttr("tests", su.Tests), intAttr("failures", su.Failures),
			intAttr("errors", su.Errors), intAttr("skipped", su.Skipped)}}
		if err := enc.EncodeToken(start); err != nil {
			return fmt.Errorf("write junit: %w", err)
		}
		err := each(func(c *engine.CaseResult) error {
			for _, mr := range c.Metrics {
				if j, ok := idx[mr.Metric]; ok && j == i {
					tc, _ := junitCaseOfReference(c.CaseID, &mr)
					if err := enc.EncodeElement(tc, caseStart); err != nil {
						return fmt.Errorf("write junit: %w", err)
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, tc := range su.Cases { // the unverified gate, after the cases
			if err := enc.EncodeElement(tc, caseStart); err != nil {
				return fmt.Errorf("write junit: %w", err)
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
	_, err := io.WriteString(w, "\n")
	return err
}

// junitCaseOfReference is junitCaseOf as it was, with fmt: the testcase
// junitCaseOf must make, and the count junitOutcome must give.
func junitCaseOfReference(caseID string, mr *engine.MetricResult) (junitCase, string) {
	tc := junitCase{Name: caseID, Classname: "anvil." + mr.Metric, Time: junitSeconds(mr.LatencyMS / 1000)}
	score := "-"
	if mr.Score != nil {
		score = fmt.Sprintf("%.3f", *mr.Score)
	}
	tc.Output = fmt.Sprintf("score=%s threshold=%.2f mode=%s\n%s", score, mr.Threshold, mr.ScoreMode, mr.Reason)
	var counted string
	switch mr.Status {
	case engine.StatusFailed:
		if mr.Gated {
			tc.Failure = &junitMessage{Message: fmt.Sprintf("score %s below threshold %.2f", score, mr.Threshold), Type: "threshold", Text: mr.Reason}
			counted = engine.StatusFailed
		}
	case engine.StatusError:
		msg := "error"
		if mr.Error != nil {
			msg = mr.Error.Error()
		}
		tc.Error = &junitMessage{Message: msg, Type: mr.ErrorClass}
		counted = engine.StatusError
	case engine.StatusSkipped:
		tc.Skipped = &junitMessage{Message: mr.Reason}
		counted = engine.StatusSkipped
	}
	return tc, counted
}

func attr(name, value string) xml.Attr { return xml.Attr{Name: xml.Name{Local: name}, Value: value} }

func intAttr(name string, v int) xml.Attr { return attr(name, strconv.Itoa(v)) }

// junitDocs are documents of every shape writeJUnit meets: no metric, a
// metric without cases, an unverified gate with and without cases, names
// and texts that need escaping.
func junitDocs() map[string]func() (*engine.Summary, []engine.CaseResult) {
	run := func(n int) func() (*engine.Summary, []engine.CaseResult) {
		return func() (*engine.Summary, []engine.CaseResult) { return junitRun(n) }
	}
	return map[string]func() (*engine.Summary, []engine.CaseResult){
		"no metrics": func() (*engine.Summary, []engine.CaseResult) { return &engine.Summary{}, nil },
		"no cases":   run(0),
		"one case":   run(1),
		"50 cases":   run(50),
		"cases without the summary's metrics": func() (*engine.Summary, []engine.CaseResult) {
			s, _ := junitRun(0)
			_, cases := junitRun(3)
			for i := range cases {
				for k := range cases[i].Metrics {
					cases[i].Metrics[k].Metric += "?"
				}
			}
			return s, cases
		},
		"an unverified gate alone": func() (*engine.Summary, []engine.CaseResult) {
			return &engine.Summary{Metrics: []engine.MetricSummary{{Metric: "m", Gated: true, Verdict: engine.VerdictUnverified}}}, nil
		},
		"extreme times and scores": func() (*engine.Summary, []engine.CaseResult) {
			s, cases := junitRun(8)
			for i, v := range []float64{0, math.Copysign(0, -1), 1e21, 1e-7, -3.5, math.MaxFloat64, math.Inf(1), math.NaN()} {
				cases[i].Metrics[0].LatencyMS = v
				cases[i].Metrics[1].LatencyMS = -v
				cases[i].Metrics[1].Score = &cases[i].Metrics[0].LatencyMS
			}
			return s, cases
		},
	}
}

// TestJUnitMatchesEncodingXML compares whole documents, byte for byte,
// with encoding/xml's, through JUnit as callers see it.
func TestJUnitMatchesEncodingXML(t *testing.T) {
	for name, doc := range junitDocs() {
		t.Run(name, func(t *testing.T) {
			s, cases := doc()
			var got, want bytes.Buffer
			if err := JUnit(&got, s, cases); err != nil {
				t.Fatal(err)
			}
			counts := newJUnitCounts(s)
			for i := range cases {
				counts.add(&cases[i])
			}
			if err := writeJUnitReference(&want, counts, Slice(cases)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("writeJUnit:\n%s\nencoding/xml:\n%s", got.String(), want.String())
			}
			if err := xml.Unmarshal(got.Bytes(), new(junitSuites)); err != nil {
				t.Fatalf("not XML encoding/xml reads: %v", err)
			}
		})
	}
}

// TestJUnitWriterKnowsEveryField fails when a JUnit type's fields or
// tags change: junitxml.go writes each by hand and must follow.
func TestJUnitWriterKnowsEveryField(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{junitSuites{}, "testsuites name,attr tests,attr failures,attr errors,attr skipped,attr testsuite"},
		{junitSuite{}, "name,attr tests,attr failures,attr errors,attr skipped,attr testcase"},
		{junitCase{}, "name,attr classname,attr time,attr failure,omitempty error,omitempty skipped,omitempty system-out,omitempty"},
		{junitMessage{}, "message,attr type,attr,omitempty ,chardata"},
	} {
		typ := reflect.TypeOf(tc.v)
		var tags []string
		for i := range typ.NumField() {
			tags = append(tags, typ.Field(i).Tag.Get("xml"))
		}
		if got := strings.Join(tags, " "); got != tc.want {
			t.Errorf("%s's fields changed: junitxml.go must write them as encoding/xml does.\ngot  %s\nwant %s", typ, got, tc.want)
		}
	}
}

// FuzzJUnitCase holds writeJUnit to encoding/xml on arbitrary testcases
// (written as a suite's gate entries) and suite names and counts.
func FuzzJUnitCase(f *testing.F) {
	f.Add(uint8(0xff), "case <1> & \"2\" 'x'", "anvil.m\n\r\t", "score 0.100 below threshold 0.60", "threshold", "a\nb\r\n\tc ]]> \x00\x1f\x7f", "score=- threshold=0.60 mode=\n\xff\xfe \ufffd \uffff \U0010ffff", 100.601)
	f.Add(uint8(0), "", "", "", "", "", "", 0.0)
	f.Add(uint8(0x12), "é", "\xed\xa0\x80", "\u2028", "", "", "", math.Inf(-1))
	f.Add(uint8(0x24), "x", "y", "", "unverified", "", "", math.NaN())
	f.Add(uint8(0x49), "x", "y", "m", "t", "", "out", 1e-7)
	f.Fuzz(func(t *testing.T, opt uint8, name, class, msg, typ, text, out string, secs float64) {
		m := &junitMessage{Message: msg, Type: typ, Text: text}
		tc := junitCase{Name: name, Classname: class, Time: junitSeconds(secs), Output: out}
		if opt&1 != 0 {
			tc.Failure = m
		}
		if opt&2 != 0 {
			tc.Error = m
		}
		if opt&4 != 0 {
			tc.Skipped = m
		}
		suite := junitSuite{Name: name + class, Tests: int(opt) - 100, Failures: len(text), Errors: -len(msg), Skipped: math.MaxInt}
		for range opt >> 6 {
			suite.Cases = append(suite.Cases, tc)
		}
		counts := &junitCounts{s: &engine.Summary{}, root: junitSuites{Name: out, Suites: []junitSuite{suite}}}
		if opt&8 != 0 {
			counts.root.Suites = append(counts.root.Suites, junitSuite{Name: typ, Cases: []junitCase{tc}})
		}
		if opt&16 != 0 {
			counts.root.Suites = nil
		}
		var got, want bytes.Buffer
		if err := writeJUnit(&got, counts, Slice(nil)); err != nil {
			t.Fatal(err)
		}
		if err := writeJUnitReference(&want, counts, Slice(nil)); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("writeJUnit:\n%q\nencoding/xml:\n%q", got.String(), want.String())
		}
	})
}

// FuzzJUnitCaseOf holds junitCaseOf and junitOutcome to the fmt-built
// testcase and count they replace.
func FuzzJUnitCaseOf(f *testing.F) {
	f.Add(uint8(0x0f), "case-1", "m", 0.19, 0.5, 100.601, "wrong \xff", "weighted", "judge")
	f.Add(uint8(0), "", "", 0.0, 0.0, 0.0, "", "", "")
	f.Add(uint8(0x09), "x", "m", math.Copysign(0, -1), -0.005, -1.0, "r", "raw", "")
	f.Add(uint8(0x19), "x", "m", math.Inf(1), math.NaN(), 1e21, "", "", "")
	f.Add(uint8(0x29), "x", "m", 0.0005, 0.125, 3.0, "", "", "")
	f.Add(uint8(0x05), "x", "m", math.MaxFloat64, -math.MaxFloat64, 5e-324, "", "", "")
	f.Fuzz(func(t *testing.T, opt uint8, caseID, metric string, score, threshold, latency float64, reason, mode, class string) {
		mr := engine.MetricResult{Metric: metric, Gated: opt&1 != 0, Threshold: threshold, LatencyMS: latency,
			Reason: reason, ScoreMode: mode, ErrorClass: class}
		mr.Status = [...]string{engine.StatusPassed, engine.StatusFailed, engine.StatusError, engine.StatusSkipped, "", "other"}[int(opt>>1&7)%6]
		if opt&16 != 0 {
			mr.Score = &score
		}
		if opt&32 != 0 {
			mr.Error = &abi.Error{Code: abi.CodeJudge, Message: reason, Plugin: class}
		}
		want, counted := junitCaseOfReference(caseID, &mr)
		got := junitCaseOf(caseID, &mr)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("junitCaseOf:\n%#v\nwith fmt:\n%#v", got, want)
		}
		if o := junitOutcome(&mr); o != counted {
			t.Fatalf("junitOutcome %q, with fmt %q", o, counted)
		}
	})
}

// failingWriter fails once ok bytes are written.
type failingWriter struct{ ok int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.ok {
		n := w.ok
		w.ok = 0
		return n, errDiskFull
	}
	w.ok -= len(p)
	return len(p), nil
}

// TestJUnitReturnsTheWritersError: a write that fails anywhere in the
// document is the error, whatever is held when it happens.
func TestJUnitReturnsTheWritersError(t *testing.T) {
	s, cases := junitRun(500)
	var whole countingWriter
	if err := JUnit(&whole, s, cases); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []int{0, 10, junitChunk, whole.bytes - 1} {
		err := JUnit(&failingWriter{ok: ok}, s, cases)
		if !errors.Is(err, errDiskFull) || !strings.HasPrefix(err.Error(), "write junit: ") {
			t.Errorf("a write failing after %d of %d bytes: %v", ok, whole.bytes, err)
		}
	}
}

// junitAllocBudget is the allocation budget of one testcase in junit.xml,
// counted over a document of 1,000 cases (the chunk buffer and the suites
// included). It counts allocations, not time, so it holds on a loaded
// machine; raise it only with a reason. 14.6 through encoding/xml and fmt,
// 2.7 when set: the classname and system-out strings, and the message of a
// failure, error or skip. The testcase's bytes are appended with none.
const junitAllocBudget = 3

func TestJUnitAllocBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	const n = 1000
	s, cases := junitRun(n)
	s.Metrics = s.Metrics[:1]
	counts := newJUnitCounts(s)
	for i := range cases {
		counts.add(&cases[i])
	}
	bw := newFileBuffer(io.Discard)
	per := testing.AllocsPerRun(20, func() {
		if err := writeJUnit(bw, counts, Slice(cases)); err != nil {
			t.Fatal(err)
		}
	}) / n
	t.Logf("%.2f allocations per testcase (budget %d)", per, junitAllocBudget)
	if per > junitAllocBudget {
		t.Errorf("junit.xml allocates %.2f times per testcase, over the budget of %d", per, junitAllocBudget)
	}
	tc := junitCaseOf(cases[1].CaseID, &cases[1].Metrics[0])
	b := make([]byte, 0, 4096)
	if a := testing.AllocsPerRun(100, func() { b = appendJUnitCase(b[:0], &tc) }); a != 0 {
		t.Errorf("appending a testcase allocates %.0f times; it should not", a)
	}
}

// BenchmarkJUnit writes the testcases of 10,000 cases of one metric into
// writeFile's buffer, by hand and through encoding/xml and fmt as before.
func BenchmarkJUnit(b *testing.B) {
	const n = 10000
	s, cases := junitRun(n)
	s.Metrics = s.Metrics[:1]
	counts := newJUnitCounts(s)
	for i := range cases {
		counts.add(&cases[i])
	}
	for _, w := range []struct {
		name  string
		write func(io.Writer, *junitCounts, Results) error
	}{{"hand", writeJUnit}, {"encoding-xml", writeJUnitReference}} {
		b.Run(w.name, func(b *testing.B) {
			var file countingWriter
			bw := newFileBuffer(&file)
			b.ReportAllocs()
			cputime.Report(b)
			for b.Loop() {
				if err := w.write(bw, counts, Slice(cases)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/case")
		})
	}
}

// TestJUnitTimeIsADecimal: a testcase's time is seconds written as a plain
// decimal, never in exponent form: JUnit's schema types it xs:decimal and
// readers that follow it refuse "2e-06".
func TestJUnitTimeIsADecimal(t *testing.T) {
	for _, tc := range []struct {
		latencyMS float64
		want      string
	}{
		{0.002, `time="0.000002"`},
		{0.0001, `time="0.000000"`},
		{0, `time="0.000000"`},
		{1500, `time="1.500000"`},
		{1e24, `time="1000000000000000000000.000000"`},
	} {
		s := &engine.Summary{Cases: 1, Metrics: []engine.MetricSummary{{Metric: "m", Verdict: engine.VerdictInformational}}}
		cases := []engine.CaseResult{{CaseID: "c", Metrics: []engine.MetricResult{{Metric: "m", Status: engine.StatusPassed, LatencyMS: tc.latencyMS}}}}
		var b bytes.Buffer
		if err := JUnit(&b, s, cases); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("latency %v ms: junit.xml has no %s:\n%s", tc.latencyMS, tc.want, b.String())
		}
	}
}

package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/cputime"
	"github.com/agentanvil/anvil/host/internal/results"
)

// junitRun is a run of n cases over three metrics: a gated one that
// passes, fails and errors, an ungated one that fails and skips, and a
// gated one that verified nothing (its gate is an extra testcase).
func junitRun(n int) (*results.Summary, []results.CaseResult) {
	s := &results.Summary{Cases: n, Metrics: []results.MetricSummary{
		{Metric: "correctness", Kind: "geval", Gated: true, Verdict: results.VerdictFailed, Threshold: 0.6, N: n},
		{Metric: "exact <&>", Kind: "exact_match", Verdict: results.VerdictInformational, Threshold: 0.5, N: n},
		{Metric: "faith", Kind: "geval", Gated: true, Verdict: results.VerdictUnverified, N: n,
			UnverifiedReason: "scored no case: all skipped (\"no key\")\n"},
	}}
	cases := make([]results.CaseResult, n)
	for i := range cases {
		score := float64(i%10) / 10
		c := &cases[i]
		c.CaseID = fmt.Sprintf("case-%06d", i)
		gated := results.MetricResult{Metric: "correctness", Status: results.StatusPassed, Gated: true, Score: &score, Threshold: 0.6,
			ScoreMode: "weighted", LatencyMS: 100.601 + float64(i), Reason: "The output answers the input & says \"why\".\n\tIt is <fine>."}
		switch i % 7 {
		case 1:
			gated.Status = results.StatusFailed
		case 2:
			gated.Status, gated.Score, gated.ErrorClass = results.StatusError, nil, "judge"
			gated.Error = abi.Errorf(abi.CodeJudge, "judge: 503 from the server\r\n")
		case 3:
			gated.Status, gated.Score, gated.Reason = results.StatusSkipped, nil, "case has no expected_output"
		}
		info := results.MetricResult{Metric: "exact <&>", Status: results.StatusFailed, Score: &score, Threshold: 0.5, LatencyMS: 0.004}
		if i%2 == 0 {
			info.Status, info.Score = results.StatusSkipped, nil
		}
		c.Metrics = []results.MetricResult{gated, info,
			{Metric: "faith", Status: results.StatusSkipped, Gated: true, Reason: "no key \xff\x01"},
			{Metric: "not in the summary", Status: results.StatusFailed, Gated: true}}
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
	var file countingWriter
	bw := newFileBuffer(&file)
	if err := JUnit(bw, s, cases); err != nil {
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

// JUnit XML as encoding/xml reads and writes it whole: what
// writeJUnitReference encodes.
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

// junitTree is the document of s and cases as one tree: a suite per
// metric of s with its cases' testcases, then its unverified gate.
func junitTree(s *results.Summary, cases []results.CaseResult) junitSuites {
	root := junitSuites{Name: "anvil"}
	for _, m := range s.Metrics {
		su := junitSuite{Name: m.Metric}
		for _, c := range cases {
			for _, mr := range c.Metrics {
				if mr.Metric != m.Metric {
					continue
				}
				su.Cases = append(su.Cases, junitCaseOf(c.CaseID, &mr))
				su.Tests++
				switch junitOutcome(&mr) {
				case results.StatusFailed:
					su.Failures++
				case results.StatusError:
					su.Errors++
				case results.StatusSkipped:
					su.Skipped++
				}
			}
		}
		if m.Verdict == results.VerdictUnverified {
			su.Cases = append(su.Cases, junitCase{Name: "(gate)", Classname: "anvil." + m.Metric,
				Error: &junitMessage{Message: "could not verify: " + m.UnverifiedReason, Type: "unverified"}})
			su.Tests++
			su.Errors++
		}
		root.Tests += su.Tests
		root.Failures += su.Failures
		root.Errors += su.Errors
		root.Skipped += su.Skipped
		root.Suites = append(root.Suites, su)
	}
	return root
}

// writeJUnitReference writes the tree through one xml.Encoder, element by
// element, as junit.xml was written before its testcases were spilled
// (and, before that, by hand to these bytes): the bytes JUnit must write.
func writeJUnitReference(w io.Writer, root junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	rootStart := xml.StartElement{Name: xml.Name{Local: "testsuites"}, Attr: []xml.Attr{
		attr("name", root.Name), intAttr("tests", root.Tests), intAttr("failures", root.Failures),
		intAttr("errors", root.Errors), intAttr("skipped", root.Skipped)}}
	if err := enc.EncodeToken(rootStart); err != nil {
		return err
	}
	for _, su := range root.Suites {
		start := xml.StartElement{Name: xml.Name{Local: "testsuite"}, Attr: []xml.Attr{
			attr("name", su.Name), intAttr("tests", su.Tests), intAttr("failures", su.Failures),
			intAttr("errors", su.Errors), intAttr("skipped", su.Skipped)}}
		if err := enc.EncodeToken(start); err != nil {
			return err
		}
		for _, tc := range su.Cases {
			if err := enc.EncodeElement(tc, testcaseStart); err != nil {
				return err
			}
		}
		if err := enc.EncodeToken(start.End()); err != nil {
			return err
		}
	}
	if err := enc.EncodeToken(rootStart.End()); err != nil {
		return err
	}
	if err := enc.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func attr(name, value string) xml.Attr { return xml.Attr{Name: xml.Name{Local: name}, Value: value} }

func intAttr(name string, v int) xml.Attr { return attr(name, strconv.Itoa(v)) }

// junitDocs are documents of every shape junit.xml takes: no metric, a
// metric without cases, an unverified gate with and without cases, names
// and texts that need escaping.
func junitDocs() map[string]func() (*results.Summary, []results.CaseResult) {
	run := func(n int) func() (*results.Summary, []results.CaseResult) {
		return func() (*results.Summary, []results.CaseResult) { return junitRun(n) }
	}
	return map[string]func() (*results.Summary, []results.CaseResult){
		"no metrics": func() (*results.Summary, []results.CaseResult) { return &results.Summary{}, nil },
		"no cases":   run(0),
		"one case":   run(1),
		"50 cases":   run(50),
		"cases without the summary's metrics": func() (*results.Summary, []results.CaseResult) {
			s, _ := junitRun(0)
			_, cases := junitRun(3)
			for i := range cases {
				for k := range cases[i].Metrics {
					cases[i].Metrics[k].Metric += "?"
				}
			}
			return s, cases
		},
		"an unverified gate alone": func() (*results.Summary, []results.CaseResult) {
			return &results.Summary{Metrics: []results.MetricSummary{{Metric: "m", Gated: true, Verdict: results.VerdictUnverified}}}, nil
		},
		"extreme times and scores": func() (*results.Summary, []results.CaseResult) {
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

// TestJUnitIsOneEncoding compares whole documents, byte for byte, with
// the one encoding/xml writes of the whole tree: the spilled suites join
// up with the indentation one encoder gives.
func TestJUnitIsOneEncoding(t *testing.T) {
	for name, doc := range junitDocs() {
		t.Run(name, func(t *testing.T) {
			s, cases := doc()
			checkJUnit(t, s, cases)
		})
	}
}

func checkJUnit(t *testing.T, s *results.Summary, cases []results.CaseResult) {
	t.Helper()
	var got, want bytes.Buffer
	if err := JUnit(&got, s, cases); err != nil {
		t.Fatal(err)
	}
	if err := writeJUnitReference(&want, junitTree(s, cases)); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("JUnit:\n%q\none encoding/xml:\n%q", got.String(), want.String())
	}
	if err := xml.Unmarshal(got.Bytes(), new(junitSuites)); err != nil {
		t.Fatalf("not XML encoding/xml reads: %v", err)
	}
}

// FuzzJUnit holds JUnit to one encoding of the whole tree on arbitrary
// texts, numbers and outcomes.
func FuzzJUnit(f *testing.F) {
	f.Add(uint8(0xff), "case <1> & \"2\" 'x'", "m\n\r\t", "a\nb\r\n\tc ]]> \x00\x1f\x7f", "\xff\xfe \ufffd \uffff \U0010ffff", 0.1, 100.601)
	f.Add(uint8(0), "", "", "", "", 0.0, 0.0)
	f.Add(uint8(0x12), "é", "\xed\xa0\x80", "\u2028", "", math.Inf(-1), math.NaN())
	f.Add(uint8(0x49), "x", "y", "m", "out", 1e-7, 1e21)
	f.Fuzz(func(t *testing.T, opt uint8, caseID, metric, reason, msg string, score, latency float64) {
		mr := results.MetricResult{Metric: metric, Gated: opt&1 != 0, Threshold: score / 2, LatencyMS: latency,
			Reason: reason, ScoreMode: msg, ErrorClass: msg}
		mr.Status = [...]string{results.StatusPassed, results.StatusFailed, results.StatusError, results.StatusSkipped, "", "other"}[int(opt>>1&7)%6]
		if opt&16 != 0 {
			mr.Score = &score
		}
		if opt&32 != 0 {
			mr.Error = &abi.Error{Code: abi.CodeJudge, Message: msg, Plugin: reason}
		}
		verdict := results.VerdictPassed
		if opt&64 != 0 {
			verdict = results.VerdictUnverified
		}
		// A summary names each metric once; the second has no cases.
		s := &results.Summary{Metrics: []results.MetricSummary{{Metric: metric, Verdict: verdict, UnverifiedReason: reason}, {Metric: metric + "'"}}}
		cases := make([]results.CaseResult, int(opt>>7)+1)
		for i := range cases {
			cases[i] = results.CaseResult{CaseID: caseID, Metrics: []results.MetricResult{mr, mr}}
		}
		checkJUnit(t, s, cases)
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
// document is the error.
func TestJUnitReturnsTheWritersError(t *testing.T) {
	s, cases := junitRun(500)
	var whole countingWriter
	if err := JUnit(&whole, s, cases); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []int{0, 10, 4 << 10, whole.bytes - 1} {
		err := JUnit(&failingWriter{ok: ok}, s, cases)
		if !errors.Is(err, errDiskFull) || !strings.HasPrefix(err.Error(), "write junit: ") {
			t.Errorf("a write failing after %d of %d bytes: %v", ok, whole.bytes, err)
		}
	}
}

// TestReportsSpillToDisk: junit.xml's testcases are held in a file per
// suite, and report.html's cases in one file, under the output directory
// while the cases come, not in memory, and the files are gone once the
// reports are written (or the Builder closed).
func TestReportsSpillToDisk(t *testing.T) {
	for _, write := range []bool{true, false} {
		dir := t.TempDir()
		s, cases := junitRun(2000)
		b := NewBuilder(dir)
		for i := range cases {
			b.Add(&cases[i])
		}
		spills, err := filepath.Glob(filepath.Join(dir, spillDirName, "*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(spills) != 5 { // a suite per metric seen, in the summary or not, and the page's cases
			t.Fatalf("spill files %v; want one per metric and one of cases", spills)
		}
		if held := len(b.pick.notPassed) + len(b.pick.passed); held != MaxReportCases {
			t.Fatalf("%d cases chosen for the page; want %d", held, MaxReportCases)
		}
		held := 0
		for _, su := range b.junit.suites {
			held += su.w.Buffered()
		}
		var onDisk int64
		for _, p := range spills {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			onDisk += fi.Size()
		}
		if held > 4*spillBuffer || onDisk < 1<<20 {
			t.Fatalf("%d bytes held, %d on disk: the testcases are not spilled", held, onDisk)
		}
		if write {
			if err := b.Write(s, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, spillDirName)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("write %v: the spill directory is left: %v", write, err)
		}
	}
}

// BenchmarkJUnit spills the testcases of 10,000 cases of one metric and
// writes the document into writeFile's buffer: the cost junit.xml adds to
// a run, per case.
func BenchmarkJUnit(b *testing.B) {
	const n = 10000
	s, cases := junitRun(n)
	s.Metrics = s.Metrics[:1]
	for i := range cases {
		cases[i].Metrics = cases[i].Metrics[:1]
	}
	var file countingWriter
	bw := newFileBuffer(&file)
	b.ReportAllocs()
	cputime.Report(b)
	for b.Loop() {
		if err := JUnit(bw, s, cases); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/case")
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
		s := &results.Summary{Cases: 1, Metrics: []results.MetricSummary{{Metric: "m", Verdict: results.VerdictInformational}}}
		cases := []results.CaseResult{{CaseID: "c", Metrics: []results.MetricResult{{Metric: "m", Status: results.StatusPassed, LatencyMS: tc.latencyMS}}}}
		var b bytes.Buffer
		if err := JUnit(&b, s, cases); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("latency %v ms: junit.xml has no %s:\n%s", tc.latencyMS, tc.want, b.String())
		}
	}
}

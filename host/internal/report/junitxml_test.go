package report

import (
	"fmt"
	"testing"

	"github.com/agentanvil/anvil/abi"
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

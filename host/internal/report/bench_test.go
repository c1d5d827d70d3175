package report_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentanvil/anvil/host/internal/cputime"
	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
)

// BenchmarkHTMLWithDAGDrawings renders a page of 1000 dag cases, each
// drawn as SVG with its path, plus the quality charts: the cost and the
// size the drawings add to report.html.
func BenchmarkHTMLWithDAGDrawings(b *testing.B) {
	t := &testing.T{}
	s, base := qualityFixture(t)
	var cases []results.CaseResult
	for i := range 1000 {
		c := base[3]
		c.CaseID = fmt.Sprintf("d%04d", i)
		cases = append(cases, c)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := report.HTML(&buf, s, cases); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "page-bytes")
	s.Graphs = nil // the same page without drawings (Mermaid source instead)
	buf.Reset()
	if err := report.HTML(&buf, s, cases); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(buf.Len()), "page-bytes-undrawn")
}

// benchResultLine is a results.jsonl line as bench/run.sh's G-Eval metric
// writes it (~1.2 KB, most of it the metric's details).
const benchResultLine = `{"case_id":"case-%06d","config_hash":"09935636f1fa8763","metrics":[{"metric":"correctness","kind":"geval","status":"%s","gated":false,"score":0.19,"threshold":0.5,"reason":"The actual output misses the point of the input and gives little of what the expected output contains.","score_mode":"weighted","details":{"steps":["Read the Input and identify exactly what it asks for.","Compare the Actual Output with the Expected Output, noting facts that agree, are missing or contradict it.","Check that the Actual Output answers the Input directly, without irrelevant or invented content.","Weigh contradictions and omissions most heavily, then minor issues of clarity."],"steps_source":"generated","raw_score":0,"weighted_score":0.19999999999999998,"score_mode":"weighted","candidates":[{"value":0,"probability":0.6},{"value":1,"probability":0.15}],"score_range":[0,10],"prompt_version":"anvil-geval-v1","usage":{"model":"bench-judge","input_tokens":659,"output_tokens":36,"usd":0.00012044999999999999,"cache_hit":false}},"usage":{"requests":1,"calls":1,"http_attempts":1,"cache_hits":0,"input_tokens":659,"output_tokens":36,"usd":0.00012044999999999999},"latency_ms":100.601}]}`

// BenchmarkWrite writes junit.xml and report.html for a run of 5,000
// cases of bench/run.sh's shape (no case files): the report phase of a
// run, per case.
func BenchmarkWrite(b *testing.B) {
	const n = 5000
	dir := b.TempDir()
	var buf bytes.Buffer
	for i := range n {
		status := "passed"
		if i%3 == 0 {
			status = "failed"
		}
		fmt.Fprintf(&buf, benchResultLine+"\n", i, status)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	s := &results.Summary{Cases: n, Metrics: []results.MetricSummary{{Metric: "correctness", Kind: "geval", N: n}}}
	b.ReportAllocs()
	cputime.Report(b)
	for b.Loop() {
		if err := report.Write(dir, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/case")
}

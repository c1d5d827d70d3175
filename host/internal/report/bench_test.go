package report_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
	"github.com/agentanvil/anvil/host/internal/report"
)

// BenchmarkHTMLWithDAGDrawings renders a page of 1000 dag cases, each
// drawn as SVG with its path, plus the quality charts: the cost and the
// size the drawings add to report.html.
func BenchmarkHTMLWithDAGDrawings(b *testing.B) {
	t := &testing.T{}
	s, base := qualityFixture(t)
	var cases []engine.CaseResult
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

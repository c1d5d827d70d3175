package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/engine"
)

func TestForHTMLKeepsFailuresFirstWithinTheBound(t *testing.T) {
	var cases []engine.CaseResult
	for i := range 10 {
		st := engine.StatusPassed
		if i%4 == 3 {
			st = engine.StatusFailed
		}
		cases = append(cases, engine.CaseResult{CaseID: fmt.Sprint(i), Metrics: []engine.MetricResult{{Metric: "m", Status: st}}})
	}
	got, err := selectForHTML(Slice(cases), 4)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.CaseID)
	}
	// failures 3 and 7, then the first passing cases 0 and 1, in results order
	if strings.Join(ids, ",") != "0,1,3,7" {
		t.Fatalf("kept %v", ids)
	}
}

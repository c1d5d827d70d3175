package compare

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/results"
)

// A cascade run against a run of its last judge alone is another
// evaluation (refused, naming the cascade); allowed, compare reports the
// verdict agreement overall and per judge that decided in the cascade.
func TestCascadeAgreementWithTheStrongJudgeAlone(t *testing.T) {
	t.Parallel()
	// Threshold .6: c2 (.6 → .5) and c7 (.5 → .6) flip; 8 of 10 agree.
	strongOnly := []float64{0.8, 0.7, 0.6, 0.6, 0.8, 0.7, 0.9, 0.5, 0.8, 0.7}
	cascade := []float64{0.8, 0.7, 0.5, 0.6, 0.8, 0.7, 0.9, 0.6, 0.8, 0.7}
	a := writeRun(t, "h1", "m", fakeMetric{"correctness", true, 0.6, strongOnly})
	b := rewriteResults(t, writeRun(t, "h2", "m", fakeMetric{"correctness", true, 0.6, cascade}), func(cr *results.CaseResult) {
		// c0..c6 decided by cheap, c7..c9 escalated to strong.
		cr.Metrics[0].DecidedBy = "cheap"
		if cr.CaseID >= "c7" {
			cr.Metrics[0].DecidedBy = "strong"
		}
	})
	ra, rb := mustLoad(t, a), mustLoad(t, b)
	_, err := Compare(ra, rb, Options{})
	var mm *MismatchError
	if !errors.As(err, &mm) || len(mm.Differences) != 1 ||
		mm.Differences[0] != "metric correctness: judged by a judge cascade in B, not in A (with --allow-config-change, compare reports the cascade's verdict agreement with the other run's judge)" {
		t.Fatalf("error %v; want the cascade named as the one difference", err)
	}
	rep, err := Compare(ra, rb, Options{AllowConfigChange: true})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics[0]
	if m.VerdictAgreement == nil || *m.VerdictAgreement != 0.8 || m.VerdictAgreementCI == nil {
		t.Fatalf("agreement %v (CI %v); want 0.8", m.VerdictAgreement, m.VerdictAgreementCI)
	}
	want := []DeciderAgreement{{Judge: "cheap", Run: "B", Cases: 7, Agree: 6, Share: 0.8571}, {Judge: "strong", Run: "B", Cases: 3, Agree: 2, Share: 0.6667}}
	if len(m.ByDecider) != 2 || m.ByDecider[0] != want[0] || m.ByDecider[1] != want[1] {
		t.Errorf("by decider %+v; want %+v", m.ByDecider, want)
	}
	var out strings.Builder
	if err := WriteTable(&out, rep, 10); err != nil {
		t.Fatal(err)
	}
	if line := "correctness: verdicts agree on 80.0% of 10 shared cases (95% CI 49.0–94.3%); by the judge that decided in B's cascade: cheap 6 of 7, strong 2 of 3"; !strings.Contains(out.String(), line) {
		t.Errorf("table lacks %q:\n%s", line, out.String())
	}
}

package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/report"
	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

func qualitySummary() *results.Summary {
	s := summary()
	m := &s.Metrics[0]
	m.Failed = 7
	m.FailedCases = []string{"c2", "c5", "c\x1b[2Jevil", "c9", "c11", "c12", "c13"}
	m.MeanCI = &stats.CI{Estimate: 0.5967, Low: 0.21, High: 0.79}
	m.PassRateCI = &stats.CI{Estimate: 0.6667, Low: 0.2077, High: 0.9385}
	m.Sampled, m.FlipShare, m.MeanSampleSD, m.MaxSampleSD = 3, ptr(1), ptr(0.3512), ptr(0.4)
	m.FlipShareCI = &stats.CI{Estimate: 1, Low: 0.4385, High: 1}
	m.Panel = &results.PanelAgreement{Judges: []string{"a", "b", "c"}, Aggregate: "median", Cases: 3,
		MeanAbsDiff: ptr(0.4), VerdictAgreement: ptr(0), Alpha: ptr(-0.3333)}
	return s
}

// The table states each metric's intervals, spread and agreement, and
// names its first failing cases (quoted when an id holds control bytes).
func TestTableQualityAndFailingCases(t *testing.T) {
	var b bytes.Buffer
	if err := report.Table(&b, qualitySummary()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"correctness: mean 0.597 [0.210, 0.790] · pass rate 66.7% [20.8%, 93.8%] · flips 3 of 3 sampled cases 100.0% [43.9%, 100.0%], sample sd mean 0.351 max 0.400 · panel a, b, c (median): mean |diff| 0.400, verdicts agree on 0.0% of 3 cases, Krippendorff α -0.333\n",
		`failing correctness: c2, c5, "c\x1b[2Jevil", c9, c11 (+2 more)` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the table without colour holds an escape byte:\n%q", out)
	}
}

// With colour, the gate column and the verdict are painted and the
// columns before the gate stay aligned.
func TestTableColor(t *testing.T) {
	var plain, colored bytes.Buffer
	if err := report.TableWith(&plain, summary(), report.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := report.TableWith(&colored, summary(), report.TableOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	c := colored.String()
	for _, want := range []string{"\x1b[31mFAIL\x1b[0m\n", "\x1b[31mFAILED\x1b[0m\n"} {
		if !strings.Contains(c, want) {
			t.Errorf("coloured table lacks %q:\n%q", want, c)
		}
	}
	stripped := strings.NewReplacer("\x1b[31m", "", "\x1b[32m", "", "\x1b[33m", "", "\x1b[0m", "").Replace(c)
	if stripped != plain.String() {
		t.Errorf("colour changed more than the painted words:\n%s\nvs\n%s", stripped, plain.String())
	}
}

// A cascade's escalations and cost, and adaptive samples' count per case,
// are one part each of the metric's line.
func TestTableCascadeAndAdaptiveSamples(t *testing.T) {
	s := summary()
	m := &s.Metrics[0]
	m.Cascade = &results.CascadeSummary{Cases: 3, Escalated: 1, EscalationShare: 0.3333,
		DecidedBy: map[string]int{"strong": 1, "cheap": 2}, USD: 0.0034, StrongOnlyUSD: 0.0099, SavedUSD: 0.0065}
	m.AdaptiveSamples = &results.AdaptiveSamplesSummary{Cases: 3, Mean: 3, Min: 2, Max: 5, Total: 9}
	var b bytes.Buffer
	if err := report.Table(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "cascade escalated 1 of 3 cases (33.3%; decided by cheap 2, strong 1), $0.0034 against $0.0099 for the last judge alone · adaptive samples 3.00 per case (2–5)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

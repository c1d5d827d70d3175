package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the comparison for a terminal: one row per metric, then
// per metric its flipped cases (pass→fail first), at most maxFlips each.
func WriteTable(w io.Writer, rep *Report, maxFlips int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s (%d cases%s)\nB: %s (%d cases%s)\n", rep.A.Dir, rep.A.Cases, verdictNote(rep.A), rep.B.Dir, rep.B.Cases, verdictNote(rep.B))
	for _, d := range rep.ConfigDifferences {
		fmt.Fprintf(&b, "config differs: %s\n", d)
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "METRIC\tGATE\tSHARED\tMEAN A\tMEAN B\tB−A\t%g%% CI\tp(B<A)\tPASS→FAIL\tFAIL→PASS\tVERDICT\n", rep.Level*100)
	for _, m := range rep.Metrics {
		gate := "no"
		if m.Gated {
			gate = "yes"
		}
		if m.Difference == nil {
			fmt.Fprintf(tw, "%s\t%s\t%d\t-\t-\t-\t-\t-\t-\t-\t%s\n", m.Name, gate, m.Shared, verdictText(m))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%+.3f\t[%+.3f, %+.3f]\t%s\t%d\t%d\t%s\n",
			m.Name, gate, m.Shared, *m.MeanA, *m.MeanB, m.Difference.Estimate, m.Difference.Low, m.Difference.High,
			pValue(m.Test.PValueLess), m.PassToFail, m.FailToPass, verdictText(m))
	}
	tw.Flush()
	for _, m := range rep.Metrics {
		if len(m.ByDecider) == 0 || m.VerdictAgreement == nil {
			continue
		}
		parts := make([]string, len(m.ByDecider))
		for i, d := range m.ByDecider {
			parts[i] = fmt.Sprintf("%s %d of %d", d.Judge, d.Agree, d.Cases)
		}
		fmt.Fprintf(&b, "\n%s: verdicts agree on %.1f%% of %d shared cases", m.Name, 100**m.VerdictAgreement, m.Shared)
		if ci := m.VerdictAgreementCI; ci != nil {
			fmt.Fprintf(&b, " (%g%% CI %.1f–%.1f%%)", ci.Level*100, 100*ci.Low, 100*ci.High)
		}
		fmt.Fprintf(&b, "; by the judge that decided in %s's cascade: %s\n", m.ByDecider[0].Run, strings.Join(parts, ", "))
	}
	for _, m := range rep.Metrics {
		if len(m.Flips) == 0 && m.OnlyA == 0 && m.OnlyB == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:", m.Name)
		if m.OnlyA > 0 || m.OnlyB > 0 {
			fmt.Fprintf(&b, " %d cases scored only in A, %d only in B (not compared)", m.OnlyA, m.OnlyB)
		}
		b.WriteString("\n")
		for i, f := range m.Flips {
			if i == maxFlips {
				fmt.Fprintf(&b, "  … %d more (see --json)\n", len(m.Flips)-maxFlips)
				break
			}
			arrow := "pass→fail"
			if f.Direction == FailToPass {
				arrow = "fail→pass"
			}
			fmt.Fprintf(&b, "  %s  %s  %.3f → %.3f\n", arrow, f.CaseID, f.ScoreA, f.ScoreB)
		}
	}
	b.WriteString("\n")
	switch rep.Verdict {
	case VerdictRegressed:
		fmt.Fprintf(&b, "REGRESSED: %s significantly worse in B\n", strings.Join(rep.Regressed, ", "))
	case VerdictUnverified:
		b.WriteString("UNVERIFIED: a gated metric has no case scored in both runs, or no metric was compared\n")
	default:
		b.WriteString("NO REGRESSION: no gated metric is significantly worse in B\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func verdictNote(r RunInfo) string {
	if r.Verdict == "" {
		return ""
	}
	return ", " + r.Verdict
}

func verdictText(m MetricComparison) string {
	switch m.Verdict {
	case MetricWorse:
		return "WORSE"
	case MetricBetter:
		return "better"
	case MetricUnverified:
		return "unverified: " + m.UnverifiedReason
	}
	return "no significant change"
}

func pValue(p float64) string {
	if p < 0.0001 {
		return "<0.0001"
	}
	return fmt.Sprintf("%.4f", p)
}

package calibrate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// statisticLabels are the table's names of the statistics, in table order.
var statisticLabels = []struct{ key, label string }{
	{Spearman, "Spearman ρ"},
	{Kendall, "Kendall τ-b"},
	{Pearson, "Pearson r"},
	{CohenKappa, "Cohen κ (pass/fail)"},
	{AlphaRatersInterval, "Krippendorff α, raters (scores)"},
	{AlphaRatersNominal, "Krippendorff α, raters (pass/fail)"},
	{AlphaJudgeNominal, "Krippendorff α, judge + raters (pass/fail)"},
}

// WriteTable writes the report for a terminal: per metric, each statistic
// with its interval, or why it is undefined.
func WriteTable(w io.Writer, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "labels: %s\nresults: %s\n", rep.Labels, rep.Results)
	for _, m := range rep.Metrics {
		fmt.Fprintf(&b, "\n%s: %d labels by %d rater(s) on %d cases; %d paired with the judge's scores",
			m.Metric, m.Labels, m.Raters, m.LabelledCases, m.Paired)
		if len(m.Unscored) > 0 {
			fmt.Fprintf(&b, " (%d not scored by the judge: %s)", len(m.Unscored), firstIDs(m.Unscored, 5))
		}
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  STATISTIC\tESTIMATE\t%g%% CI\tN\n", rep.Level*100)
		for _, s := range statisticLabels {
			if ci, ok := m.Agreement[s.key]; ok {
				fmt.Fprintf(tw, "  %s\t%+.3f\t[%+.3f, %+.3f]\t%d\n", s.label, ci.Estimate, ci.Low, ci.High, ci.N)
			} else if why, ok := m.Undefined[s.key]; ok {
				// The reason goes in an unterminated last cell, which does
				// not widen the aligned columns.
				fmt.Fprintf(tw, "  %s\t-\t-\t\t%s\n", s.label, why)
			}
		}
		tw.Flush()
	}
	if len(rep.Unlabelled) > 0 {
		fmt.Fprintf(&b, "\nno labels for: %s\n", strings.Join(rep.Unlabelled, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstIDs(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(", … %d more", len(ids)-n)
}

package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentanvil/anvil/host/internal/compare"
	"github.com/agentanvil/anvil/host/internal/results"
)

// CompareFileName is the comparison `anvil-host compare A B --report`
// writes into run B's directory; report.html shows it as "A vs B".
const CompareFileName = "compare.json"

// MaxCompareFlips bounds the flipped cases the compare view lists per
// metric (pass→fail first); compare.json keeps them all.
const MaxCompareFlips = 50

// compareView is run B against run A, on run B's page.
type compareView struct {
	A, B                  compare.RunInfo
	Level                 string
	Verdict, VerdictClass string
	Regressed             string
	Differences, Warnings []string
	Metrics               []compareMetricView
}

type compareMetricView struct {
	Name, Verdict, VerdictClass string
	Gated                       bool
	Shared, OnlyA, OnlyB        int
	MeanA, MeanB, Diff, CI, P   string
	PassToFail, FailToPass      int
	Chart                       template.HTML
	Flips                       []flipView
	MoreFlips                   int
}

type flipView struct {
	Case           caseLink
	Arrow, Class   string
	ScoreA, ScoreB string
}

// readComparison reads dir/compare.json when there is one. It is shown
// only when it compares this run (its run B has the summary's run id);
// one that cannot be read or is of another run is a note on the page,
// never an error — the run's results stand.
func readComparison(dir string, s *results.Summary) (*compare.Report, string) {
	b, err := os.ReadFile(filepath.Join(dir, CompareFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, CompareFileName + " is not shown: " + err.Error()
	}
	var rep compare.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, CompareFileName + " is not shown: " + err.Error()
	}
	if rep.B.RunID != s.RunID || (s.ConfigHash != "" && rep.B.ConfigHash != s.ConfigHash) {
		return nil, fmt.Sprintf("%s is not shown: it compares run %q as B, not this run %q (run anvil-host compare again)", CompareFileName, rep.B.RunID, s.RunID)
	}
	return &rep, ""
}

func comparisonView(rep *compare.Report, anchors map[string]string) *compareView {
	v := &compareView{A: rep.A, B: rep.B, Level: fmt.Sprintf("%g%%", rep.Level*100), Verdict: strings.ToUpper(strings.ReplaceAll(rep.Verdict, "_", " ")),
		Regressed: strings.Join(rep.Regressed, ", "), Differences: rep.ConfigDifferences, Warnings: rep.Warnings}
	switch rep.Verdict {
	case compare.VerdictRegressed:
		v.VerdictClass = "failed"
	case compare.VerdictNoRegression:
		v.VerdictClass = "passed"
	default:
		v.VerdictClass = "error"
	}
	for _, m := range rep.Metrics {
		mv := compareMetricView{Name: m.Name, Gated: m.Gated, Shared: m.Shared, OnlyA: m.OnlyA, OnlyB: m.OnlyB,
			PassToFail: m.PassToFail, FailToPass: m.FailToPass, MeanA: "-", MeanB: "-", Diff: "-", CI: "-", P: "-"}
		switch m.Verdict {
		case compare.MetricWorse:
			mv.Verdict, mv.VerdictClass = "WORSE", "failed"
		case compare.MetricBetter:
			mv.Verdict, mv.VerdictClass = "better", "passed"
		case compare.MetricUnverified:
			mv.Verdict, mv.VerdictClass = "unverified: "+m.UnverifiedReason, "error"
		default:
			mv.Verdict, mv.VerdictClass = "no significant change", "skipped"
		}
		if m.MeanA != nil && m.MeanB != nil {
			mv.MeanA, mv.MeanB = fmt.Sprintf("%.3f", *m.MeanA), fmt.Sprintf("%.3f", *m.MeanB)
		}
		if d := m.Difference; d != nil {
			mv.Diff = fmt.Sprintf("%+.3f", d.Estimate)
			mv.CI = fmt.Sprintf("[%+.3f, %+.3f]", d.Low, d.High)
			mv.Chart = differenceSVG(d.Estimate, d.Low, d.High, rep.Level)
		}
		if m.Test != nil {
			mv.P = fmt.Sprintf("%.4f", m.Test.PValueLess)
			if m.Test.PValueLess < 0.0001 {
				mv.P = "<0.0001"
			}
		}
		for i, f := range m.Flips {
			if i == MaxCompareFlips {
				mv.MoreFlips = len(m.Flips) - i
				break
			}
			fv := flipView{Case: caseLink{ID: f.CaseID, Anchor: anchors[f.CaseID]}, Arrow: "pass→fail", Class: "failed",
				ScoreA: fmt.Sprintf("%.3f", f.ScoreA), ScoreB: fmt.Sprintf("%.3f", f.ScoreB)}
			if f.Direction == compare.FailToPass {
				fv.Arrow, fv.Class = "fail→pass", "passed"
			}
			mv.Flips = append(mv.Flips, fv)
		}
		v.Metrics = append(v.Metrics, mv)
	}
	return v
}

// differenceSVG draws B − A with its interval on [−1, 1], zero marked:
// an interval left of zero is a drop.
func differenceSVG(est, low, high, level float64) template.HTML {
	const w, h, left, right = 280.0, 30.0, 8.0, 8.0
	plotW := w - left - right
	x := func(v float64) float64 { return left + (math.Max(-1, math.Min(1, v))+1)/2*plotW }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart interval difference" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`,
		w, h, w, h, html.EscapeString(fmt.Sprintf("mean difference B − A with its %g%% interval", level*100)))
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="15" x2="%.1f" y2="15"/>`, left, w-right)
	fmt.Fprintf(&b, `<rect class="ci" x="%.1f" y="9" width="%.1f" height="12" rx="3"><title>%g%% interval %+.4g to %+.4g</title></rect>`,
		x(low), math.Max(2, x(high)-x(low)), level*100, low, high)
	fmt.Fprintf(&b, `<circle class="estimate" cx="%.1f" cy="15" r="4.5"><title>B − A %+.4g</title></circle>`, x(est), est)
	fmt.Fprintf(&b, `<line class="threshold" x1="%.1f" y1="3" x2="%.1f" y2="27"><title>no change</title></line>`, x(0), x(0))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// WriteComparison writes rep as dir/compare.json, replacing it whole (a
// reader never sees half a file); Write then shows it on dir's page.
func WriteComparison(dir string, rep *compare.Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", CompareFileName, err)
	}
	tmp, err := os.CreateTemp(dir, "."+CompareFileName+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", CompareFileName, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", CompareFileName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", CompareFileName, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, CompareFileName)); err != nil {
		return fmt.Errorf("write %s: %w", CompareFileName, err)
	}
	return nil
}

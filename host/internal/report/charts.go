package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/agentanvil/anvil/host/internal/results"
	"github.com/agentanvil/anvil/host/internal/stats"
)

// Charts are inline SVG drawn here from a metric's summary (its
// aggregates, never its cases), so a page with a thousand cases has the
// same few charts as one with ten. Colours come from the page's CSS
// classes, so the charts follow its light and dark themes.

// qualityCard is one metric's charts on the page.
type qualityCard struct {
	Name, Anchor string
	Histogram    template.HTML
	Scored       int
	Mean         *intervalView
	PassRate     *intervalView
	Spread       *spreadView
	Panel        *panelView
	Calibration  *calibrationView
	DAGSamples   *dagSamplesView
}

type intervalView struct {
	Text  string
	Chart template.HTML
}

type spreadView struct {
	Sampled      int
	Flips        int
	FlipShare    *intervalView
	MeanSD       string
	MaxSD        string
	FlippedCases []caseLink
}

type panelView struct {
	Judges    string
	Aggregate string
	Cases     int
	MeanDiff  string
	Agreement string
	Alpha     string
	AlphaV    string
	Means     template.HTML
	Pairs     []results.PairAgreement
}

// qualityCards builds the charts of every metric that scored a case.
func qualityCards(s *results.Summary, anchors map[string]string, cal map[string]*calibrationView) []qualityCard {
	var out []qualityCard
	for i, m := range s.Metrics {
		if m.Scored == 0 && cal[m.Metric] == nil {
			continue
		}
		c := qualityCard{Name: m.Metric, Anchor: fmt.Sprintf("quality-%d", i+1), Scored: m.Scored, Calibration: cal[m.Metric]}
		if len(m.Histogram) > 0 {
			c.Histogram = histogramSVG(m.Histogram, m.Threshold)
		}
		if m.MeanCI != nil {
			c.Mean = &intervalView{Text: ciText(m.MeanCI, "%.3f", 1), Chart: intervalSVG(m.MeanCI, m.Threshold, "mean score")}
		}
		if m.PassRateCI != nil {
			c.PassRate = &intervalView{Text: ciText(m.PassRateCI, "%.1f%%", 100), Chart: intervalSVG(m.PassRateCI, -1, "pass rate")}
		}
		if m.Sampled > 0 && m.FlipShare != nil {
			sv := &spreadView{Sampled: m.Sampled, Flips: int(math.Round(*m.FlipShare * float64(m.Sampled))),
				MeanSD: fmt.Sprintf("%.3f", deref(m.MeanSampleSD)), MaxSD: fmt.Sprintf("%.3f", deref(m.MaxSampleSD))}
			if m.FlipShareCI != nil {
				sv.FlipShare = &intervalView{Text: ciText(m.FlipShareCI, "%.1f%%", 100), Chart: intervalSVG(m.FlipShareCI, -1, "share of cases whose verdict flips between samples")}
			}
			for _, id := range m.FlippedCases {
				sv.FlippedCases = append(sv.FlippedCases, caseLink{ID: id, Anchor: anchors[id]})
			}
			c.Spread = sv
		}
		if pa := m.Panel; pa != nil && pa.Cases > 0 {
			pv := &panelView{Judges: strings.Join(pa.Judges, ", "), Aggregate: pa.Aggregate, Cases: pa.Cases,
				MeanDiff: optNum(pa.MeanAbsDiff, "%.3f"), Alpha: optNum(pa.Alpha, "%.3f"), AlphaV: optNum(pa.AlphaVerdicts, "%.3f"),
				Pairs: pa.Pairs, Means: barsSVG(pa.Judges, pa.JudgeMeans, m.Threshold)}
			if pa.VerdictAgreement != nil {
				pv.Agreement = fmt.Sprintf("%.1f%%", *pa.VerdictAgreement*100)
			}
			c.Panel = pv
		}
		c.DAGSamples = dagSamplesViewOf(m.DAGSamples, anchors)
		if c.Histogram == "" && c.Mean == nil && c.PassRate == nil && c.Spread == nil && c.Panel == nil && c.Calibration == nil && c.DAGSamples == nil {
			continue // a summary written before these numbers existed
		}
		out = append(out, c)
	}
	return out
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

func optNum(v *float64, format string) string {
	if v == nil {
		return "undefined"
	}
	return fmt.Sprintf(format, *v)
}

// histogramSVG draws ten bins over [0, 1]: bars at or above the threshold
// in the pass colour, the rest in the fail colour, and the threshold as a
// dashed line.
func histogramSVG(bins []int, threshold float64) template.HTML {
	const w, h, left, bottom, top = 280.0, 130.0, 28.0, 22.0, 8.0
	plotW, plotH := w-left-8, h-bottom-top
	peak := 1
	for _, n := range bins {
		peak = max(peak, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart histogram" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="score histogram">`, w, h, w, h)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, left, h-bottom, w-8, h-bottom)
	bw := plotW / float64(len(bins))
	for i, n := range bins {
		lo := float64(i) / float64(len(bins))
		bh := plotH * float64(n) / float64(peak)
		cls := "bar fail"
		if lo >= threshold {
			cls = "bar pass"
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%.1f–%.1f: %d case(s)</title></rect>`,
			cls, left+float64(i)*bw+1, h-bottom-bh, bw-2, bh, lo, lo+1/float64(len(bins)), n)
	}
	for _, t := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f">%g</text>`, left+t*plotW, h-6, t)
	}
	fmt.Fprintf(&b, `<text class="tick end" x="%.1f" y="%.1f">%d</text>`, left-4, top+8, peak)
	if threshold >= 0 && threshold <= 1 {
		x := left + threshold*plotW
		fmt.Fprintf(&b, `<line class="threshold" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"><title>threshold %g</title></line>`, x, top, x, h-bottom, threshold)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// intervalSVG draws an estimate and its interval on [0, 1], with the
// threshold as a tick when it is in [0, 1].
func intervalSVG(ci *stats.CI, threshold float64, what string) template.HTML {
	const w, h, left, right = 280.0, 30.0, 8.0, 8.0
	plotW := w - left - right
	x := func(v float64) float64 { return left + math.Max(0, math.Min(1, v))*plotW }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart interval" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s with its %.0f%% interval">`,
		w, h, w, h, html.EscapeString(what), ci.Level*100)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="15" x2="%.1f" y2="15"/>`, left, w-right)
	fmt.Fprintf(&b, `<rect class="ci" x="%.1f" y="9" width="%.1f" height="12" rx="3"><title>%.0f%% interval %.4g–%.4g</title></rect>`,
		x(ci.Low), math.Max(2, x(ci.High)-x(ci.Low)), ci.Level*100, ci.Low, ci.High)
	fmt.Fprintf(&b, `<circle class="estimate" cx="%.1f" cy="15" r="4.5"><title>%s %.4g</title></circle>`, x(ci.Estimate), html.EscapeString(what), ci.Estimate)
	if threshold >= 0 && threshold <= 1 {
		fmt.Fprintf(&b, `<line class="threshold" x1="%.1f" y1="3" x2="%.1f" y2="27"><title>threshold %g</title></line>`, x(threshold), x(threshold), threshold)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// barsSVG draws one horizontal bar per label on [0, 1].
func barsSVG(labels []string, values []float64, threshold float64) template.HTML {
	const w, row, left = 280.0, 20.0, 70.0
	h := row*float64(len(labels)) + 6
	plotW := w - left - 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart bars" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="mean score per judge">`, w, h, w, h)
	for i, label := range labels {
		if i >= len(values) {
			break
		}
		y := 3 + float64(i)*row
		v := math.Max(0, math.Min(1, values[i]))
		cls := "bar fail"
		if values[i] >= threshold {
			cls = "bar pass"
		}
		fmt.Fprintf(&b, `<text class="tick end" x="%.1f" y="%.1f">%s</text>`, left-6, y+13, html.EscapeString(clip(label)))
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: mean %.4g</title></rect>`,
			cls, left, y+2, math.Max(1, v*plotW), row-6, html.EscapeString(label), values[i])
		fmt.Fprintf(&b, `<text class="tick start" x="%.1f" y="%.1f">%.3f</text>`, left+v*plotW+4, y+13, values[i])
	}
	if threshold >= 0 && threshold <= 1 {
		x := left + threshold*plotW
		fmt.Fprintf(&b, `<line class="threshold" x1="%.1f" y1="0" x2="%.1f" y2="%.1f"/>`, x, x, h)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// scatterSVG draws points (x: the humans' score on their scale, y: the
// judge's score on [0, 1]) with the judge's threshold as a dashed line.
func scatterSVG(xs, ys []float64, threshold float64, xLabel, yLabel string) template.HTML {
	const size, pad = 230.0, 34.0
	plot := size - pad - 8
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
	}
	if !(xhi > xlo) {
		xlo, xhi = xlo-1, xlo+1
	}
	// A margin, so points at the extremes are not drawn on the frame.
	margin := (xhi - xlo) * 0.06
	xlo, xhi = xlo-margin, xhi+margin
	px := func(v float64) float64 { return pad + (v-xlo)/(xhi-xlo)*plot }
	py := func(v float64) float64 { return 8 + plot - math.Max(0, math.Min(1, v))*plot }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart scatter" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s against %s">`,
		size, size, size, size, html.EscapeString(yLabel), html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<rect class="frame" x="%.1f" y="8" width="%.1f" height="%.1f"/>`, pad, plot, plot)
	if threshold >= 0 && threshold <= 1 {
		fmt.Fprintf(&b, `<line class="threshold" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"><title>threshold %g</title></line>`, pad, py(threshold), pad+plot, py(threshold), threshold)
	}
	for i := range min(len(xs), len(ys), maxScatterPoints) {
		fmt.Fprintf(&b, `<circle class="point" cx="%.1f" cy="%.1f" r="3.5"><title>human %.4g, judge %.4g</title></circle>`, px(xs[i]), py(ys[i]), xs[i], ys[i])
	}
	fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f">%.3g</text><text class="tick" x="%.1f" y="%.1f">%.3g</text>`, pad, size-14, xlo, pad+plot, size-14, xhi)
	fmt.Fprintf(&b, `<text class="tick end" x="%.1f" y="%.1f">0</text><text class="tick end" x="%.1f" y="16">1</text>`, pad-4, 8+plot, pad-4)
	fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f">%s</text>`, pad+plot/2, size-2, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text class="tick" x="10" y="%.1f" transform="rotate(-90 10 %.1f)">%s</text>`, 8+plot/2, 8+plot/2, html.EscapeString(yLabel))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// maxScatterPoints bounds a scatter plot: the page stays small however
// many labels there are.
const maxScatterPoints = 2000

package report

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"strings"

	"github.com/agentanvil/anvil/host/internal/calibrate"
)

// calibrationView is a metric's agreement with human labels, when the
// output directory has a calibration.json (`anvil-host calibrate`).
type calibrationView struct {
	Cases       int
	Raters      int
	Scatter     template.HTML
	Coefficient []coefficientView
}

type coefficientView struct {
	Name, Value string
}

// coefficientNames are calibrate's statistics in the order the page
// lists them, with the names people read.
var coefficientNames = []struct{ key, name string }{
	{calibrate.Spearman, "Spearman ρ"},
	{calibrate.Kendall, "Kendall τ-b"},
	{calibrate.Pearson, "Pearson r"},
	{calibrate.CohenKappa, "Cohen κ (pass/fail)"},
	{calibrate.AlphaRatersInterval, "Krippendorff α among raters (scores)"},
	{calibrate.AlphaRatersNominal, "Krippendorff α among raters (pass/fail)"},
	{calibrate.AlphaJudgeNominal, "Krippendorff α, judge with raters (pass/fail)"},
}

// readCalibration reads dir/calibration.json when there is one. Without
// it the page has no calibration plots; one that cannot be read is a note
// on the page, never an error — the run's results stand.
func readCalibration(dir string) (map[string]*calibrationView, string) {
	rep, err := calibrate.ReadFile(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, "calibration.json is not shown: " + err.Error()
	}
	return calibrationViews(rep), ""
}

func calibrationViews(rep *calibrate.Report) map[string]*calibrationView {
	out := map[string]*calibrationView{}
	for _, mc := range rep.Metrics {
		cv := &calibrationView{Cases: mc.Paired, Raters: mc.Raters}
		var xs, ys []float64
		for _, p := range mc.Points {
			if p.Human != nil {
				xs, ys = append(xs, *p.Human), append(ys, p.Judge)
			}
		}
		if len(xs) > 0 {
			cv.Scatter = scatterSVG(xs, ys, mc.Threshold, "human score (raters' mean)", "judge score")
		}
		for _, c := range coefficientNames {
			if ci, ok := mc.Agreement[c.key]; ok {
				cv.Coefficient = append(cv.Coefficient, coefficientView{Name: c.name,
					Value: fmt.Sprintf("%+.3f [%+.3f, %+.3f] · n %d", ci.Estimate, ci.Low, ci.High, ci.N)})
			} else if why, ok := mc.Undefined[c.key]; ok {
				cv.Coefficient = append(cv.Coefficient, coefficientView{Name: c.name, Value: "undefined: " + strings.TrimSpace(why)})
			}
		}
		out[mc.Metric] = cv
	}
	return out
}

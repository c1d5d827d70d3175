package report

import "html/template"

// calibrationView is a metric's agreement with human labels, when the
// output directory has a calibration.json.
type calibrationView struct {
	Cases       int
	Scatter     template.HTML
	Coefficient []coefficientView
}

type coefficientView struct {
	Name, Value string
}

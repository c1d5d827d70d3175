package stats

import (
	"errors"
	"fmt"
	"math"
)

// ErrUndefined is wrapped by every error for a statistic that has no value
// on its input (too few values, no variance, one category only).
var ErrUndefined = errors.New("statistic undefined")

// CI is a point estimate with a confidence interval.
type CI struct {
	// Estimate is the statistic on the full sample.
	Estimate float64 `json:"estimate"`
	// Low and High bound the interval; Low <= High.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Level is the confidence level, 0.95 for a 95% interval.
	Level float64 `json:"level"`
	// N is the number of units (values, cases or pairs) the estimate uses.
	N int `json:"n"`
	// Resamples is the number of bootstrap resamples on which the
	// statistic was defined and that the bounds come from; 0 for a
	// closed-form interval (Wilson).
	Resamples int `json:"resamples,omitempty"`
}

// Contains reports whether v lies inside the interval (bounds included).
func (iv CI) Contains(v float64) bool { return iv.Low <= v && v <= iv.High }

func checkLevel(level float64) error {
	if !(level > 0 && level < 1) {
		return fmt.Errorf("confidence level %v: want a fraction between 0 and 1 (0.95 for 95%%)", level)
	}
	return nil
}

func undefined(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUndefined}, args...)...)
}

func checkFinite(what string, xs []float64) error {
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s[%d] is %v: want a finite number", what, i, x)
		}
	}
	return nil
}

func checkPaired(x, y []float64) error {
	if len(x) != len(y) {
		return fmt.Errorf("paired series of different lengths: %d and %d", len(x), len(y))
	}
	if err := checkFinite("x", x); err != nil {
		return err
	}
	return checkFinite("y", y)
}

package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Samples is a metric's samples: a number (samples: 5, N) or adaptive
// samples (samples: {max: 10, min: 2, stop_at_ci_width: 0.1}): at least
// Min scorings per judge and case, then more one at a time until the 95%
// t interval of their mean is at most StopAtCIWidth wide, or Max are taken.
type Samples struct {
	N             int     `yaml:"-" json:",omitempty"`
	Max           int     `yaml:"max" json:",omitempty"`
	Min           int     `yaml:"min" json:",omitempty"`
	StopAtCIWidth float64 `yaml:"stop_at_ci_width" json:",omitempty"`
}

// adaptiveSamples is the mapping form of samples as the strict walk checks
// it (absent keys are nil there, so a given 0 is seen).
type adaptiveSamples struct {
	Max           *int     `yaml:"max"`
	Min           *int     `yaml:"min"`
	StopAtCIWidth *float64 `yaml:"stop_at_ci_width"`
}

// UnmarshalYAML reads a number or the adaptive mapping; the strict walk
// has already reported unknown keys and bad numbers by line.
func (s *Samples) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var a adaptiveSamples
		if err := n.Decode(&a); err != nil {
			return err
		}
		*s = Samples{}
		if a.Max != nil {
			s.Max = *a.Max
		}
		if a.Min != nil {
			s.Min = *a.Min
		}
		if a.StopAtCIWidth != nil {
			s.StopAtCIWidth = *a.StopAtCIWidth
		}
		return nil
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return err
	}
	*s = Samples{N: v}
	return nil
}

// Adaptive reports whether the samples are the adaptive mapping.
func (s Samples) Adaptive() bool { return s.Max > 0 }

// MinSamples is how many scorings every case gets before the interval
// may stop them: min, or 2 (one sample has no interval).
func (s Samples) MinSamples() int {
	if s.Min > 0 {
		return s.Min
	}
	return min(2, s.Max)
}

// DefaultEscalateBand is the escalate_band of a cascade that gives none.
var DefaultEscalateBand = [2]float64{0.15, 0.85}

// Band is the metric's escalate band, the default when absent.
func (m *Metric) Band() []float64 {
	if len(m.EscalateBand) == 2 {
		return m.EscalateBand
	}
	return DefaultEscalateBand[:]
}

// checkCascade validates judge_cascade, escalate_band and adaptive
// samples.
func (c *Config) checkCascade(where string, m *Metric) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: metric %s: %s", where, m.Name, fmt.Sprintf(format, args...)))
	}
	if m.JudgeCascade != nil {
		switch {
		case m.Judge != "":
			bad("give judge or judge_cascade, not both (judge_cascade: [%s] names the judges cheapest first)", strings.Join(m.JudgeCascade, ", "))
		case len(m.Judges) > 0:
			bad("give judges or judge_cascade, not both (a panel asks every judge; a cascade asks the next only when unsure)")
		}
		if len(m.JudgeCascade) < 2 {
			bad("judge_cascade names %d judge(s); a cascade needs at least two (cheapest first)", len(m.JudgeCascade))
		}
		seen := map[string]bool{}
		for i, jn := range m.JudgeCascade {
			switch {
			case jn == "":
				bad("judge_cascade[%d] is empty", i)
			case seen[jn]:
				bad("judge_cascade[%d]: judge %q is named twice", i, jn)
			case c.Judges[jn] == nil:
				bad("judge_cascade[%d]: judge %q is not configured under judges", i, jn)
			}
			seen[jn] = true
		}
	}
	if m.EscalateBand != nil {
		b := m.EscalateBand
		switch {
		case m.JudgeCascade == nil:
			bad("escalate_band applies to a judge_cascade; this metric has none")
		case len(b) != 2:
			bad("escalate_band has %d values; want [low, high]", len(b))
		case b[0] < 0 || b[1] > 1:
			bad("escalate_band [%g, %g] is outside [0, 1] (a pass probability)", b[0], b[1])
		case b[0] > b[1]:
			bad("escalate_band [%g, %g] is inverted: low > high", b[0], b[1])
		}
	}
	if s := m.Samples; s.Min > 0 || s.StopAtCIWidth > 0 || s.Max > 0 {
		switch {
		case s.Max == 0:
			bad("samples.max is required in adaptive samples (the most scorings a case may take)")
		case s.Max > MaxSamples:
			bad("samples.max %d is more than %d (each sample is a judge call per case)", s.Max, MaxSamples)
		case s.Min > s.Max:
			bad("samples.min %d is more than samples.max %d", s.Min, s.Max)
		}
		if s.StopAtCIWidth == 0 {
			bad("samples.stop_at_ci_width is required in adaptive samples (stop once the 95%% interval of a case's mean score is this wide)")
		}
	}
	return errs
}

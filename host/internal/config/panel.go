package config

import (
	"fmt"
	"strings"
)

// checkPanel validates a metric's judges, aggregate and samples: a panel
// names configured judges, each once, and not beside judge; aggregate is
// one the host knows; samples is within MaxSamples (0 and negatives are
// the strict walk's to refuse).
func (c *Config) checkPanel(where string, m *Metric) []error {
	var errs []error
	if m.Judge != "" && len(m.Judges) > 0 {
		errs = append(errs, fmt.Errorf("%s: metric %s: give judge or judges, not both (judges: [%s] is a panel; judge: %s is one judge)",
			where, m.Name, strings.Join(m.Judges, ", "), m.Judge))
	}
	if m.Judges != nil && len(m.Judges) == 0 {
		errs = append(errs, fmt.Errorf("%s: metric %s: judges is empty: name at least one judge, or drop the key", where, m.Name))
	}
	seen := map[string]bool{}
	for i, jn := range m.Judges {
		switch {
		case jn == "":
			errs = append(errs, fmt.Errorf("%s: metric %s: judges[%d] is empty", where, m.Name, i))
		case seen[jn]:
			errs = append(errs, fmt.Errorf("%s: metric %s: judges[%d]: judge %q is named twice (a panel's judges are distinct; use samples to score more than once)", where, m.Name, i, jn))
		case c.Judges[jn] == nil:
			errs = append(errs, fmt.Errorf("%s: metric %s: judges[%d]: judge %q is not configured under judges", where, m.Name, i, jn))
		}
		seen[jn] = true
	}
	switch m.Aggregate {
	case "", AggregateMean, AggregateMedian, AggregateMajority:
		if m.Aggregate != "" && len(m.Judges) < 2 {
			errs = append(errs, fmt.Errorf("%s: metric %s: aggregate %q needs a panel of at least two judges (judges: [a, b])", where, m.Name, m.Aggregate))
		}
	default:
		errs = append(errs, fmt.Errorf("%s: metric %s: aggregate %q is not one of %s, %s, %s", where, m.Name, m.Aggregate, AggregateMean, AggregateMedian, AggregateMajority))
	}
	if m.Samples.N > MaxSamples {
		errs = append(errs, fmt.Errorf("%s: metric %s: samples %d is more than %d (each sample is a judge call per case)", where, m.Name, m.Samples.N, MaxSamples))
	}
	return errs
}

package engine

import (
	"math"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/results"
)

func TestSamplesPassProbability(t *testing.T) {
	scoredAt := func(s float64, p *float64) results.MetricResult {
		from := ""
		if p != nil {
			from = PPassCandidates
		}
		return results.MetricResult{Score: &s, PPass: p, PPassFrom: from}
	}
	p := func(v float64) *float64 { return &v }
	failed := results.MetricResult{Status: results.StatusError, Error: &abi.Error{Code: abi.CodeJudge}}
	for _, tc := range []struct {
		name string
		runs []results.MetricResult
		want *float64
		from string
	}{
		// Every sample has candidates: the mean of their P(pass).
		{"candidates", []results.MetricResult{scoredAt(.6, p(.8)), scoredAt(.4, p(.3))}, p(.55), PPassCandidates},
		// Some without: the share of samples at or above .5.
		{"share", []results.MetricResult{scoredAt(.6, p(.8)), scoredAt(.4, nil), scoredAt(.5, nil)}, p(2.0 / 3), PPassSamples},
		{"one sample passes", []results.MetricResult{scoredAt(.5, nil)}, p(1), PPassVerdict},
		{"one sample fails", []results.MetricResult{scoredAt(.49, nil)}, p(0), PPassVerdict},
		// Failed samples are left out.
		{"a failed sample", []results.MetricResult{scoredAt(.9, nil), failed}, p(1), PPassVerdict},
		{"nothing scored", []results.MetricResult{failed}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from := samplesPassProbability(tc.runs, 0.5)
			if (got == nil) != (tc.want == nil) || (got != nil && math.Abs(*got-*tc.want) > 1e-12) || from != tc.from {
				t.Errorf("P(pass) %v from %q; want %v from %q", deref(got), from, deref(tc.want), tc.from)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// The band's bounds escalate (a P(pass) equal to one is inside); a
// judge error escalates; a result without a score decides.
func TestEscalation(t *testing.T) {
	m := &metric{cascade: []string{"cheap", "strong"}, band: [2]float64{0.15, 0.85}}
	p := func(v float64) *float64 { return &v }
	s := 0.5
	for _, tc := range []struct {
		name string
		r    results.MetricResult
		want string
	}{
		{"low bound", results.MetricResult{Score: &s, PPass: p(0.15), PPassFrom: PPassCandidates}, "P(pass) 0.15 from cheap (candidates) is inside [0.15, 0.85]"},
		{"high bound", results.MetricResult{Score: &s, PPass: p(0.85), PPassFrom: PPassSamples}, "P(pass) 0.85 from cheap (samples) is inside [0.15, 0.85]"},
		{"below", results.MetricResult{Score: &s, PPass: p(0.1499)}, ""},
		{"above", results.MetricResult{Score: &s, PPass: p(0.8501)}, ""},
		{"judge error", results.MetricResult{Status: results.StatusError, ErrorClass: "judge", Error: &abi.Error{Code: abi.CodeJudge, Message: "HTTP 500"}}, "cheap failed: HTTP 500"},
		{"plugin error", results.MetricResult{Status: results.StatusError, ErrorClass: "plugin", Error: &abi.Error{Code: abi.CodeTrap, Message: "trap"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := escalation(m, "cheap", &tc.r, false); got != tc.want {
				t.Errorf("escalation = %q; want %q", got, tc.want)
			}
		})
	}
	if got := escalation(m, "cheap", &results.MetricResult{Score: &s, PPass: p(1)}, true); got == "" {
		t.Error("an estimate: want every case escalated")
	}
}

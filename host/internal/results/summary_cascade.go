package results

// CascadeSummary is a judge cascade's work over a metric's cases: how many
// each judge decided, how many were escalated, and what the cascade cost
// against asking only its last judge.
type CascadeSummary struct {
	// Cases are the cases the cascade decided (every result carrying
	// decided_by); Escalated those a judge handed on at least once, and
	// EscalationShare Escalated / Cases.
	Cases           int     `json:"cases"`
	Escalated       int     `json:"escalated"`
	EscalationShare float64 `json:"escalation_share"`
	// DecidedBy counts the cases each judge decided.
	DecidedBy map[string]int `json:"decided_by"`
	// USD is what the cascade spent on those cases; StrongOnlyUSD the
	// estimate of what its last judge alone would have (the cases it was
	// not asked priced from the deciding judge's tokens at its prices);
	// SavedUSD the difference (negative when escalating cost more than it
	// saved).
	USD           float64 `json:"usd"`
	StrongOnlyUSD float64 `json:"strong_only_usd"`
	SavedUSD      float64 `json:"saved_usd"`
}

// AdaptiveSamplesSummary is how many scorings adaptive samples took per
// case.
type AdaptiveSamplesSummary struct {
	Cases int     `json:"cases"`
	Mean  float64 `json:"mean"`
	Min   int     `json:"min"`
	Max   int     `json:"max"`
	// Total is the scorings of every case together.
	Total int `json:"total"`
}

func (ms *MetricSummary) addCascade(r *MetricResult) {
	if r.SamplesTaken > 0 {
		a := ms.AdaptiveSamples
		if a == nil {
			a = &AdaptiveSamplesSummary{Min: r.SamplesTaken}
			ms.AdaptiveSamples = a
		}
		a.Cases++
		a.Total += r.SamplesTaken
		a.Min, a.Max = min(a.Min, r.SamplesTaken), max(a.Max, r.SamplesTaken)
	}
	if r.DecidedBy == "" {
		return
	}
	c := ms.Cascade
	if c == nil {
		c = &CascadeSummary{DecidedBy: map[string]int{}}
		ms.Cascade = c
	}
	c.Cases++
	c.DecidedBy[r.DecidedBy]++
	if r.EscalatedBecause != "" {
		c.Escalated++
	}
	c.USD += r.Usage.USD
	if r.StrongOnlyUSD != nil {
		c.StrongOnlyUSD += *r.StrongOnlyUSD
	}
}

func (ms *MetricSummary) finishCascade() {
	if a := ms.AdaptiveSamples; a != nil {
		a.Mean = Round4(float64(a.Total) / float64(a.Cases))
	}
	if c := ms.Cascade; c != nil {
		c.EscalationShare = Round4(float64(c.Escalated) / float64(c.Cases))
		c.SavedUSD = c.StrongOnlyUSD - c.USD
	}
}

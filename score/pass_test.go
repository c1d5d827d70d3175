package score_test

import (
	"math"
	"testing"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/score"
)

func TestPassProbability(t *testing.T) {
	t.Parallel()
	cands := func(vp ...float64) abi.ScoreResult {
		var sr abi.ScoreResult
		for i := 0; i+1 < len(vp); i += 2 {
			sr.Candidates = append(sr.Candidates, abi.ScoreCandidate{Value: int(vp[i]), Probability: vp[i+1]})
		}
		return sr
	}
	for _, tc := range []struct {
		name      string
		sr        abi.ScoreResult
		min, max  int
		threshold float64
		want      float64
		ok        bool
	}{
		// 0..10, threshold 0.5: values 5 and up pass.
		{"split", cands(4, 0.3, 5, 0.5, 9, 0.2), 0, 10, 0.5, 0.7, true},
		{"all pass", cands(8, 0.6, 9, 0.4), 0, 10, 0.5, 1, true},
		{"none pass", cands(1, 0.9, 2, 0.1), 0, 10, 0.5, 0, true},
		// Unnormalised mass (candidates below 1% dropped) is renormalised.
		{"renormalised", cands(3, 0.25, 7, 0.5), 0, 10, 0.5, 2.0 / 3, true},
		// 1..5: 4 normalises to 0.75, exactly the threshold, and passes.
		{"at threshold", cands(3, 0.5, 4, 0.5), 1, 5, 0.75, 0.5, true},
		{"no candidates", abi.ScoreResult{Raw: 7, Value: 7, Mode: abi.ScoreRaw}, 0, 10, 0.5, 0, false},
		{"zero mass", cands(3, 0), 0, 10, 0.5, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok, err := score.PassProbability(tc.sr, tc.min, tc.max, tc.threshold)
			if err != nil || ok != tc.ok || math.Abs(p-tc.want) > 1e-12 {
				t.Errorf("PassProbability = %v, %v, %v; want %v, %v", p, ok, err, tc.want, tc.ok)
			}
		})
	}
	if _, _, err := score.PassProbability(cands(3, math.NaN()), 0, 10, 0.5); err == nil {
		t.Error("a NaN probability: want an error")
	}
	if _, _, err := score.PassProbability(cands(3, 1), 5, 5, 0.5); err == nil {
		t.Error("an empty range: want an error")
	}
}

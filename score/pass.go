package score

import (
	"fmt"

	"github.com/agentanvil/anvil/abi"
)

// PassProbability is how likely the judge's reply passes threshold (a
// fraction of [0,1]): the probability mass of the score's candidates whose
// normalised value reaches the threshold, over the candidates' total mass.
// Candidates are the log-probability distribution of the score token
// ("weighted") or the relative frequencies of the samples ("sampled"). A
// score with no candidates ("raw": one integer, no distribution) has
// ok false: its pass probability is 0 or 1 and says nothing about how sure
// the judge is.
//
// A candidate passes by the host's one verdict rule (normalised value >=
// threshold), applied to the same Normalize the score goes through, so a
// point mass gives exactly the verdict the score gives. Note that the
// weighted score (the mean of the candidates) can pass while the pass
// probability is below 0.5, and the other way round: the two measure
// different things.
func PassProbability(sr abi.ScoreResult, min, max int, threshold float64) (p float64, ok bool, err error) {
	if err := checkRange(min, max); err != nil {
		return 0, false, err
	}
	if len(sr.Candidates) == 0 {
		return 0, false, nil
	}
	var pass, total float64
	for _, c := range sr.Candidates {
		if !(c.Probability >= 0) {
			return 0, false, fmt.Errorf("%w: candidate %d has probability %v", ErrNoScore, c.Value, c.Probability)
		}
		n, err := Normalize(float64(c.Value), min, max)
		if err != nil {
			return 0, false, err
		}
		total += c.Probability
		if n >= threshold {
			pass += c.Probability
		}
	}
	if total == 0 {
		return 0, false, nil
	}
	return pass / total, true, nil
}

package calibrate

import (
	"fmt"
	"path/filepath"

	"github.com/agentanvil/anvil/host/internal/results"
)

// ReferenceRater names the rater of labels taken from a reference run.
const ReferenceRater = "reference run"

// LabelsFromRun takes the labels from another run's results: each case
// the run scored (status passed or failed) is labelled, per metric, with
// its score and verdict, by one rater. Calibrating a run against them
// measures how far it agrees with the reference run's judge — a judge
// cascade against its strong judge alone, one model against another. It
// returns the labels and the path their lines are in, for messages.
func LabelsFromRun(dir string) ([]Label, string, error) {
	path := filepath.Join(dir, "results.jsonl")
	var labels []Label
	line := 0
	err := results.Each(path, func(cr *results.CaseResult) error {
		line++
		for _, mr := range cr.Metrics {
			if mr.Score == nil || (mr.Status != results.StatusPassed && mr.Status != results.StatusFailed) {
				continue
			}
			score, pass := *mr.Score, mr.Status == results.StatusPassed
			labels = append(labels, Label{CaseID: cr.CaseID, Metric: mr.Metric, Rater: ReferenceRater, Score: &score, Pass: &pass, Line: line})
		}
		return nil
	})
	if err != nil {
		return nil, path, fmt.Errorf("reference run %s: %w", dir, err)
	}
	if len(labels) == 0 {
		return nil, path, fmt.Errorf("reference run %s: no scored case in %s", dir, path)
	}
	return labels, path, nil
}

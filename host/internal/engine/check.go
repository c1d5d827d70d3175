package engine

import (
	"context"
	"io"

	"github.com/agentanvil/anvil/host/internal/results"
)

// DatasetCheck is what CheckDataset found.
type DatasetCheck struct {
	Cases int
	Gaps  []results.FieldGap
}

// CheckDataset reads the whole dataset up front — every record must parse,
// every id must be unique — and reports, per metric, the fields cases lack,
// before anything is spent. It streams: memory is the id set and the gaps.
func (e *Engine) CheckDataset(ctx context.Context, input string) (DatasetCheck, error) {
	var out DatasetCheck
	if input == "" {
		input = e.cfg.Resolve(e.cfg.Dataset)
	}
	ds, err := OpenDataset(input)
	if err != nil {
		return out, err
	}
	defer ds.Close()
	index := map[[2]string]int{}
	for {
		c, err := ds.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out.Cases++
		for _, m := range e.metrics {
			for _, f := range c.Missing(m.requiredFields()) {
				k := [2]string{m.key, f}
				i, ok := index[k]
				if !ok {
					i = len(out.Gaps)
					index[k] = i
					out.Gaps = append(out.Gaps, results.FieldGap{Metric: m.key, Field: f})
				}
				out.Gaps[i].Cases++
				if len(out.Gaps[i].First) < 5 {
					out.Gaps[i].First = append(out.Gaps[i].First, c.ID)
				}
			}
		}
	}
}

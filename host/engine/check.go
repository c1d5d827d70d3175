package engine

import (
	"context"
	"fmt"
	"io"
)

// FieldGap is a field some cases lack that a metric needs: those cases
// will be skipped for that metric.
type FieldGap struct {
	Metric string   `json:"metric"`
	Field  string   `json:"field"`
	Cases  int      `json:"cases"`
	First  []string `json:"first"` // up to 5 case ids
}

func (g FieldGap) String() string {
	return fmt.Sprintf("metric %s: %d case(s) have no %s (e.g. %v); they will be skipped for it", g.Metric, g.Cases, g.Field, g.First)
}

// CheckDataset reads the whole dataset up front — every record must parse —
// and reports, per metric, the fields cases lack, before anything is spent.
func (e *Engine) CheckDataset(ctx context.Context, input string) (cases int, gaps []FieldGap, err error) {
	if input == "" {
		input = e.cfg.Resolve(e.cfg.Dataset)
	}
	ds, err := OpenDataset(input)
	if err != nil {
		return 0, nil, err
	}
	defer ds.Close()
	index := map[[2]string]int{}
	for {
		c, err := ds.Next(ctx)
		if err == io.EOF {
			return cases, gaps, nil
		}
		if err != nil {
			return cases, gaps, err
		}
		cases++
		for _, m := range e.metrics {
			for _, f := range c.Missing(m.requiredFields()) {
				k := [2]string{m.key, f}
				i, ok := index[k]
				if !ok {
					i = len(gaps)
					index[k] = i
					gaps = append(gaps, FieldGap{Metric: m.key, Field: f})
				}
				gaps[i].Cases++
				if len(gaps[i].First) < 5 {
					gaps[i].First = append(gaps[i].First, c.ID)
				}
			}
		}
	}
}

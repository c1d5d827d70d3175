package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/results"
)

// CheckMeasures runs every metric once, under estimate's dry run, on the
// first case of the dataset that has the fields the metric needs, and
// refuses the config when a kind answers invalid_config: the error run
// would give every case, found before any. It is how validate sees what
// a kind needs of the config that its descriptor cannot declare — a
// similarity kind's judge without embedding_model (the descriptor asks
// only for the judge capability, and an embed request is made at measure
// time) — by running the kind's own code rather than a copy of its
// rules in the host. Nothing calls a judge: cached requests are served
// from the cache, the rest answered by the dry run, so no key is needed.
//
// A metric no case has the fields for is not measured (its gaps are
// CheckDataset's to report), and a kind that needs something only on
// some cases is seen only when the first such case is.
func (e *Engine) CheckMeasures(ctx context.Context, input string) error {
	if input == "" {
		input = e.cfg.Resolve(e.cfg.Dataset)
	}
	ds, err := OpenDataset(input)
	if err != nil {
		return err
	}
	defer ds.Close()
	dry := &dryRun{outputTokens: assumedReplyTokens}
	// A metric skipped for want of a judge key is checked all the same,
	// as CheckKinds checks it: the dry run needs no key.
	skips := map[*metric]string{}
	for _, m := range e.all {
		skips[m], m.skip = m.skip, ""
	}
	defer func() {
		for m, why := range skips {
			m.skip = why
		}
		// The run prepares for real; forget the dry run's state.
		for _, m := range e.all {
			m.prepared, m.prepareDetails, m.prepareErr, m.prepareUsage = nil, nil, nil, results.JudgeUsage{}
		}
	}()
	for _, m := range e.allInOrder() {
		e.prepare(ctx, m, dry)
	}
	var errs []error
	todo := map[*metric]bool{}
	for _, m := range e.metrics {
		todo[m] = true
	}
	for len(todo) > 0 {
		c, err := ds.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		for _, m := range e.metrics {
			if !todo[m] || len(c.Missing(m.requiredFields())) > 0 {
				continue
			}
			delete(todo, m)
			r := e.measure(ctx, m, c, dry)
			if r.Error == nil || r.Error.Code != abi.CodeInvalidConfig {
				// Anything else depends on the case or the judge's
				// replies, which the dry run does not have.
				continue
			}
			errs = append(errs, fmt.Errorf("%s:%d: metric %s: %s (as run would answer every case; measured on case %s)",
				e.cfg.File, m.cfg.Line, m.cfg.Name, configError(r.Error), c.ID))
		}
	}
	return errors.Join(errs...)
}

// configError is an invalid_config's message with the field it names,
// when the message does not already name it.
func configError(ae *abi.Error) string {
	if ae.Field == "" || strings.Contains(ae.Message, ae.Field) {
		return ae.Message
	}
	return ae.Field + ": " + ae.Message
}

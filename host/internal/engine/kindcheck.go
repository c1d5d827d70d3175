package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentanvil/anvil/abi"
)

// CheckKinds runs each metric kind's own check of its params — the code the
// run itself runs, in the plugin, not a copy of its rules in the host —
// and returns the kinds' warnings (e.g. G-Eval's "both criteria and
// evaluation_steps"). An invalid_config is a config error, naming the
// file, the metric and the field. validate calls it, and run calls it
// before its first judge call, so both refuse and warn alike.
//
// The check is the kind's Prepare, answered by estimate's dry run: a
// request in the judge cache is served from it and any other is answered
// without calling the judge (so no key is needed). The SDK checks the
// config before Prepare does anything else. A kind without Prepare is
// checked by its params schema only (at New): the ABI has no other call
// that checks a config without measuring a case.
func (e *Engine) CheckKinds(ctx context.Context) (warnings []string, err error) {
	var errs []error
	for _, m := range e.allInOrder() {
		// A metric skipped for want of a judge (no key) is checked all
		// the same: the dry run calls no judge, and validate needs no key.
		if m.plugin == nil || !m.desc.Prepare {
			continue
		}
		svc := e.services(m, &dryRun{outputTokens: assumedReplyTokens})
		// The kind's own log lines would repeat in the real prepare; what
		// the check has to say comes back as warnings or the error.
		svc.logger = slog.New(slog.DiscardHandler)
		res, perr := m.plugin.Prepare(ctx, svc, &abi.PrepareRequest{
			Kind: m.kind, Metric: m.key, Config: m.params, JudgeModel: m.judgeModel,
		})
		where := fmt.Sprintf("%s:%d: metric %s", e.cfg.File, m.cfg.Line, m.cfg.Name)
		var ae *abi.Error
		switch {
		case perr != nil:
			ae = asABI(perr)
		case res.Error != nil:
			ae = res.Error
		}
		if ae != nil {
			if ae.Code == abi.CodeInvalidConfig {
				errs = append(errs, fmt.Errorf("%s: %s", where, configMessage(ae)))
			}
			// Any other failure (a plugin fault, a judge the dry run
			// cannot price) is not the config's: the run reports it.
			continue
		}
		var d struct {
			Warnings []string `json:"warnings"`
		}
		if json.Unmarshal(res.Details, &d) == nil {
			for _, w := range d.Warnings {
				warnings = append(warnings, fmt.Sprintf("%s: %s", where, w))
			}
		}
	}
	return warnings, errors.Join(errs...)
}

// configMessage names the params field of an invalid_config when the kind
// named it.
func configMessage(ae *abi.Error) string {
	if ae.Field == "" {
		return "params: " + ae.Message
	}
	return "params." + ae.Field + ": " + ae.Message
}

package content

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/sdk"
)

// PromptAlignmentKind returns the prompt_alignment metric kind.
func PromptAlignmentKind() *sdk.MetricKind[PromptAlignmentConfig] {
	return &sdk.MetricKind[PromptAlignmentConfig]{
		Name:           KindPromptAlignment,
		Description:    "Prompt alignment: the share of the prompt's instructions (prompt_instructions) the actual output follows (every instruction judged in one call)",
		RequiredFields: []string{abi.FieldInput, abi.FieldActualOutput},
		Validate:       validatePromptAlignment,
		Measure:        measurePromptAlignment,
	}
}

func measurePromptAlignment(ctx context.Context, h sdk.Host, cfg *PromptAlignmentConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	if err := validatePromptAlignment(cfg); err != nil {
		return nil, err
	}
	r := newKindRun(KindPromptAlignment, h, req, cfg.StrictMode, cfg.ReasonCall)
	ins := cfg.PromptInstructions
	var vs []judged.Verdict
	call := r.Request(PurposeVerdicts, promptAlignmentMessages(req.Case.Input, req.Case.ActualOutput, ins),
		judged.CountedVerdictsSchema(yesNo, len(ins)), "content_prompt_alignment")
	err := r.Checked(ctx, call, func(raw []byte) string {
		var problem string
		vs, problem = judged.ParseVerdicts(raw, ins, "instruction", yesNo)
		return problem
	}, fmt.Sprintf(`exactly %d verdicts, one per instruction, in the order of the numbered list, each verdict "yes" or "no"`, len(ins)))
	if err != nil {
		return nil, err
	}
	c, failed := judged.Tally(vs, func(v string) bool { return v == judged.Yes })
	r.d.Verdicts, r.d.Counts, r.d.Failed = vs, c, failed
	score := float64(c.Yes) / float64(c.Total)
	r.d.Formula = fmt.Sprintf("followed / instructions = %d / %d = %s", c.Yes, c.Total, judged.FormatScore(score))
	var b strings.Builder
	if c.Yes == c.Total {
		fmt.Fprintf(&b, "The output follows all %s.", judged.Plural(c.Total, "instruction"))
	} else {
		fmt.Fprintf(&b, "The output follows %d of %s. Not followed:", c.Yes, judged.Plural(c.Total, "instruction"))
		listFailing(&b, vs, failed, "not followed")
	}
	intro := "A judge decided for each instruction of a prompt whether an AI's output to the input below follows it. The score is the share of instructions followed.\n\nInput:\n" + judged.Fenced("INPUT", req.Case.Input)
	return r.conclude(ctx, score, b.String(), intro, "instructions not followed")
}

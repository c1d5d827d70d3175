// Package agent provides Anvil's LLM-judged kinds over what an agent did
// (docs/metrics.md has each formula and what differs from DeepEval):
//
//   - "argument_correctness" (fields input, tools_called): ONE call judges
//     whether each tool call's arguments correctly and relevantly address
//     the input (yes / no). Score = (calls − no) / calls.
//   - "task_completion" (input, actual_output; tools_called when the case
//     has them): ONE call states the task (the user's goal, or the
//     configured task) and the outcome the agent reached, and scores from
//     0 to 1 how far the outcome achieves the task.
//
// Invariants: the kinds talk to the judge only through sdk.Host, by way of
// plugins/judged; the verdict count is checked against the tool calls and
// bounded in the schema; a task_completion score outside [0, 1] is
// repaired once, never clamped.
package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/sdk"
)

// Names and version of the plugin and its kinds.
const (
	PluginName              = "agent"
	Version                 = "1.0.0"
	KindArgumentCorrectness = "argument_correctness"
	KindTaskCompletion      = "task_completion"
)

// Judge-call purposes, for the host's accounting.
const (
	PurposeVerdicts = judged.PurposeVerdicts
	PurposeReason   = judged.PurposeReason
	PurposeTask     = "task"
)

// Plugin returns the agent plugin, for linking into the host or serving
// from a Wasm module.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         PluginName,
		Version:      Version,
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds:        []sdk.Kind{ArgumentCorrectnessKind(), TaskCompletionKind()},
	}
}

// Config is the configuration of argument_correctness.
type Config struct {
	StrictMode bool `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if every tool call's arguments are correct, else 0; the threshold is forced to 1."`
	ReasonCall bool `json:"reason_call,omitempty" jsonschema_description:"Make one extra judge call (purpose \"reason\") that writes the reason as prose. Default false: the reason is built from the verdicts, with no extra call."`
}

// TaskConfig is the configuration of task_completion.
type TaskConfig struct {
	Task       string `json:"task,omitempty" jsonschema_description:"The task the agent was given, the same for every case. Default: the judge infers the user's goal from each case's input."`
	StrictMode bool   `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if the judge scores the task fully completed (1), else 0; the threshold is forced to 1."`
}

// Details are MeasureResult.Details of both kinds.
type Details struct {
	Kind string `json:"kind"`
	// Verdicts judge the tool calls (argument_correctness); Item is the
	// call as the judge saw it.
	Verdicts []judged.Verdict `json:"verdicts,omitempty"`
	Counts   *judged.Counts   `json:"counts,omitempty"`
	Failed   []int            `json:"failed,omitempty"`
	// Task, Outcome and Judged are task_completion's: the task (given or
	// inferred), the outcome the judge saw, and its score before strict_mode.
	Task     string   `json:"task,omitempty"`
	TaskFrom string   `json:"task_from,omitempty"` // "config" or "judge"
	Outcome  string   `json:"outcome,omitempty"`
	Judged   *float64 `json:"judged,omitempty"`
	Formula  string   `json:"formula"`
	judged.Trail
}

// toolText renders one tool call as prompt text: name(arguments) → output.
func toolText(c abi.ToolCall) string {
	args := strings.TrimSpace(string(c.Arguments))
	if args == "" {
		args = "no arguments"
	}
	s := c.Name + "(" + args + ")"
	if out := strings.TrimSpace(string(c.Output)); out != "" {
		s += " → " + out
	}
	return s
}

func toolsText(calls []abi.ToolCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = toolText(c)
	}
	return out
}

// ArgumentCorrectnessKind returns the argument_correctness metric kind.
func ArgumentCorrectnessKind() *sdk.MetricKind[Config] {
	return &sdk.MetricKind[Config]{
		Name:           KindArgumentCorrectness,
		Description:    "Argument correctness: the share of the agent's tool calls whose arguments correctly and relevantly address the input (every call judged in one call)",
		RequiredFields: []string{abi.FieldInput, abi.FieldToolsCalled},
		Measure:        measureArguments,
	}
}

var yesNo = []string{judged.Yes, judged.No}

func measureArguments(ctx context.Context, h sdk.Host, cfg *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	d := &Details{Kind: KindArgumentCorrectness}
	r := judged.NewRun(KindArgumentCorrectness, prompts, h, req, cfg.StrictMode, &d.Trail)
	calls := toolsText(req.Case.ToolsCalled)
	var vs []judged.Verdict
	err := r.Checked(ctx, r.Request(PurposeVerdicts, argumentsMessages(req.Case.Input, calls), judged.CountedVerdictsSchema(yesNo, len(calls)), "agent_argument_verdicts"),
		func(raw []byte) string {
			var problem string
			vs, problem = judged.ParseVerdicts(raw, calls, "tool call", yesNo)
			return problem
		}, fmt.Sprintf(`exactly %d verdicts, one per tool call, in the order of the numbered list, each verdict "yes" or "no"`, len(calls)))
	if err != nil {
		return nil, err
	}
	c, failed := judged.Tally(vs, func(v string) bool { return v != judged.No })
	d.Verdicts, d.Counts, d.Failed = vs, &c, failed
	score := float64(c.Passed) / float64(c.Total)
	d.Formula = fmt.Sprintf("(calls − no) / calls = (%d − %d) / %d = %s", c.Total, c.No, c.Total, judged.FormatScore(score))
	var b strings.Builder
	if c.No == 0 {
		fmt.Fprintf(&b, "The arguments of all %s address the input.", judged.Plural(c.Total, "tool call"))
	} else {
		fmt.Fprintf(&b, "The arguments of %d of %s do not address the input:", c.No, judged.Plural(c.Total, "tool call"))
		judged.ListItems(&b, vs, failed)
	}
	reason := b.String()
	score, reason = strict(r, d, score, reason)
	if cfg.ReasonCall {
		intro := "A judge decided for each tool call an agent made whether its arguments correctly and relevantly address the input below. The score is the share of calls whose arguments do.\n\nInput:\n" + judged.Fenced("INPUT", req.Case.Input)
		reason = r.ProseReason(ctx, intro, score, reason, "verdicts")
	}
	return r.Result(score, reason, d)
}

// strict applies strict_mode (DeepEval's: any score below 1 is 0).
func strict(r *judged.Run, d *Details, score float64, reason string) (float64, string) {
	if !r.Trail.StrictMode {
		return score, reason
	}
	s := 0.0
	if score == 1 {
		s = 1
	}
	d.Formula += fmt.Sprintf("; strict_mode: 1 only if the score is 1 → %s", judged.FormatScore(s))
	if s < score {
		reason += " strict_mode: score 0 because the score is not 1."
	}
	return s, reason
}

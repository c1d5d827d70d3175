package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/sdk"
)

// TaskCompletionKind returns the task_completion metric kind.
func TaskCompletionKind() *sdk.MetricKind[TaskConfig] {
	return &sdk.MetricKind[TaskConfig]{
		Name:           KindTaskCompletion,
		Description:    "Task completion: how far the outcome the agent reached (its output and tool calls) achieves the task, from 0 to 1 (task, outcome and score in one call)",
		RequiredFields: []string{abi.FieldInput, abi.FieldActualOutput},
		Measure:        measureTask,
	}
}

func measureTask(ctx context.Context, h sdk.Host, cfg *TaskConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	d := &Details{Kind: KindTaskCompletion, TaskFrom: "judge"}
	task := strings.TrimSpace(cfg.Task)
	if task != "" {
		d.TaskFrom = "config"
	}
	r := judged.NewRun(KindTaskCompletion, prompts, h, req, cfg.StrictMode, &d.Trail)
	var out taskReply
	err := r.Checked(ctx, r.Request(PurposeTask, taskMessages(req.Case, task), taskSchema, ""), func(raw []byte) string {
		var problem string
		out, problem = parseTask(raw)
		return problem
	}, `"task", "outcome", a "score" from 0 to 1 and a "reason"`)
	if err != nil {
		return nil, err
	}
	if task == "" {
		task = out.Task
	}
	d.Task, d.Outcome, d.Judged = task, out.Outcome, &out.Score
	d.Formula = fmt.Sprintf("the judge's score = %s", judged.FormatScore(out.Score))
	reason := fmt.Sprintf("Task: %s Outcome: %s Score %s: %s", sentence(task), sentence(out.Outcome), judged.FormatScore(out.Score), out.Reason)
	score, reason := strict(r, d, out.Score, reason)
	return r.Result(score, reason, d)
}

func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && !strings.ContainsAny(s[len(s)-1:], ".!?") {
		s += "."
	}
	return s
}

type taskReply struct {
	Task, Outcome, Reason string
	Score                 float64
}

// parseTask decodes the task reply; a score outside [0, 1] is a problem
// (repaired), never clamped.
func parseTask(raw []byte) (taskReply, string) {
	var out struct {
		Task    *string  `json:"task"`
		Outcome *string  `json:"outcome"`
		Score   *float64 `json:"score"`
		Reason  *string  `json:"reason"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return taskReply{}, "not a JSON object with task, outcome, score and reason"
	}
	if out.Score == nil {
		return taskReply{}, `no "score"`
	}
	if s := *out.Score; math.IsNaN(s) || s < 0 || s > 1 {
		return taskReply{}, fmt.Sprintf("score %v is outside [0, 1]", s)
	}
	t := taskReply{Task: judged.TrimPtr(out.Task), Outcome: judged.TrimPtr(out.Outcome), Reason: judged.TrimPtr(out.Reason), Score: *out.Score}
	if t.Outcome == "" {
		return taskReply{}, `no "outcome"`
	}
	return t, ""
}

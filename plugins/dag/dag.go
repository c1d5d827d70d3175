// Package dag provides the LLM-judged DAG node kinds: "task" (the judge
// writes a text that child nodes read), "binary" (a true/false judgement)
// and "choice" (one of the node's configured verdicts). The host's DAG
// scheduler walks the graph; each node run is one judge call.
//
// Prompt shape, shared by the three kinds: the node's instructions or
// criteria, then the resolved text — the outputs of the node's task parents
// under their labels, in the order the host hands them over, then the
// selected test-case fields under their titles — then the JSON to return.
//
// Invariants: one judge call per node run, at temperature 0; a decision
// node's verdict is always one of NodeRequest.Verdicts (a mismatch is a
// metric error naming the node and the allowed verdicts); judge faults are
// returned as the host's *abi.Error so their code survives.
package dag

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// PromptVersion is embedded in every prompt; change it when a prompt's
// wording changes so cached replies to the old wording are not served.
const PromptVersion = "anvil-dag-v2"

// Names and version.
const (
	PluginName = "dag"
	Version    = "1.0.0"
	KindTask   = "task"
	KindBinary = "binary"
	KindChoice = "choice"
)

// BinaryVerdicts is the fixed verdict set of a binary node.
var BinaryVerdicts = []string{"false", "true"}

// TaskConfig configures a task node.
type TaskConfig struct {
	Instructions string   `json:"instructions" jsonschema:"required,minLength=1" jsonschema_description:"What the judge must produce from the node's inputs (e.g. \"Extract the headings of the actual output\")."`
	OutputLabel  string   `json:"output_label,omitempty" jsonschema_description:"Name of what the node produces; child nodes see its output under this label (default: the node id)."`
	Params       []string `json:"params,omitempty" jsonschema_description:"Test-case fields shown to the judge, under their titles (input, actual_output, ..., a conversation's turns, last_user_turn or last_assistant_turn, or a free-form field). A case lacking one is recorded as missing_field."`
}

// BinaryConfig configures a binary node.
type BinaryConfig struct {
	Criteria string   `json:"criteria" jsonschema:"required,minLength=1" jsonschema_description:"A yes/no question or criterion the judge decides; verdict true means it holds."`
	Params   []string `json:"params,omitempty" jsonschema_description:"Test-case fields shown to the judge, under their titles. A case lacking one is recorded as missing_field."`
}

// ChoiceConfig configures a choice node. Its verdicts are the verdict
// strings of its children in the graph; the host hands them over.
type ChoiceConfig struct {
	Criteria string   `json:"criteria" jsonschema:"required,minLength=1" jsonschema_description:"The question whose answer is one of the node's verdicts (its children's verdict strings)."`
	Params   []string `json:"params,omitempty" jsonschema_description:"Test-case fields shown to the judge, under their titles. A case lacking one is recorded as missing_field."`
}

// Details are NodeResult.Details of every node kind.
type Details struct {
	PromptVersion string `json:"prompt_version"`
	Usage         Usage  `json:"usage"`
}

// Usage is the accounting of the node's judge call.
type Usage struct {
	Model        string  `json:"model,omitempty"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	CacheHit     bool    `json:"cache_hit"`
}

// Plugin returns the dag plugin with its three node kinds.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         PluginName,
		Version:      Version,
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds:        []sdk.Kind{TaskKind(), BinaryKind(), ChoiceKind()},
	}
}

// TaskKind returns the task node kind.
func TaskKind() *sdk.NodeKind[TaskConfig] {
	return &sdk.NodeKind[TaskConfig]{
		Name:        KindTask,
		Description: "LLM task: the judge writes a text from the node's inputs; child nodes read it under the node's output label",
		Fields:      func(c *TaskConfig) []string { return c.Params },
		Validate: func(c *TaskConfig) error {
			return validate("instructions", c.Instructions, c.Params)
		},
		Run: runTask,
	}
}

// BinaryKind returns the binary judgement node kind.
func BinaryKind() *sdk.NodeKind[BinaryConfig] {
	return &sdk.NodeKind[BinaryConfig]{
		Name:        KindBinary,
		Description: "LLM binary judgement: verdict true or false, with a reason",
		Fields:      func(c *BinaryConfig) []string { return c.Params },
		Validate: func(c *BinaryConfig) error {
			return validate("criteria", c.Criteria, c.Params)
		},
		Verdicts: BinaryVerdicts,
		Run:      runBinary,
	}
}

// ChoiceKind returns the choice (non-binary judgement) node kind.
func ChoiceKind() *sdk.NodeKind[ChoiceConfig] {
	return &sdk.NodeKind[ChoiceConfig]{
		Name:        KindChoice,
		Description: "LLM choice: the judge picks one of the node's verdicts, with a reason",
		Fields:      func(c *ChoiceConfig) []string { return c.Params },
		Validate: func(c *ChoiceConfig) error {
			return validate("criteria", c.Criteria, c.Params)
		},
		Run: runChoice,
	}
}

func validate(field, text string, params []string) error {
	if strings.TrimSpace(text) == "" {
		e := abi.Errorf(abi.CodeInvalidConfig, "%s is required", field)
		e.Field = field
		return e
	}
	seen := map[string]bool{}
	for i, p := range params {
		if strings.TrimSpace(p) == "" || p != strings.TrimSpace(p) {
			e := abi.Errorf(abi.CodeInvalidConfig, "params[%d] %q is not a field name", i, p)
			e.Field = "params"
			return e
		}
		if seen[p] {
			e := abi.Errorf(abi.CodeInvalidConfig, "params lists %q twice", p)
			e.Field = "params"
			return e
		}
		seen[p] = true
	}
	return nil
}

const systemPrompt = "You are a meticulous evaluator of LLM outputs. Follow the instructions exactly and answer with JSON only. (prompt " + PromptVersion + ")"

// resolvedText renders the parents' outputs under their labels (in the
// order given), then the selected fields under their titles.
func resolvedText(req *abi.NodeRequest, params []string) string {
	var parts []string
	for _, in := range req.Inputs {
		label := strings.TrimSpace(in.Label)
		if label == "" {
			label = in.NodeID
		}
		parts = append(parts, label+":\n"+in.Output+"\n")
	}
	for _, p := range params {
		text, _ := req.Case.Field(p)
		parts = append(parts, abi.FieldTitle(p)+":\n"+text+"\n")
	}
	if len(parts) == 0 {
		return ""
	}
	return "<<<BEGIN INPUT>>>\n" + strings.Join(parts, "\n") + "<<<END INPUT>>>\n"
}

// messages lays a node's prompt out static-first: the system message holds
// what is the same for every case — the role, the node's instructions
// (head) and the reply's shape (tail) — and the user message the case's
// input alone, so providers' prefix caches (OpenAI's automatic one,
// Anthropic's at the judge's breakpoint on the system prompt) serve the
// instructions from the second case on.
func messages(head, text, tail string) []abi.Message {
	if text == "" {
		text = "(no input)\n"
	}
	return []abi.Message{
		{Role: "system", Content: systemPrompt + "\n\n" + head + "\n\n" + tail},
		{Role: "user", Content: text + "\n" + closingLine},
	}
}

// closingLine ends every node's user message.
const closingLine = "Answer for this input as the instructions above say, and return only the JSON object."

func taskMessages(c *TaskConfig, req *abi.NodeRequest) []abi.Message {
	head := "Follow the instructions below using the input that follows them.\n\nInstructions:\n" + strings.TrimSpace(c.Instructions)
	label := strings.TrimSpace(c.OutputLabel)
	what := "your output"
	if label != "" {
		what = "your output (" + label + ")"
	}
	tail := `Return only a JSON object with one key, "output": ` + what + ` as a string. No other text.` + "\nExample JSON:\n" + `{"output": "<your output>"}`
	return messages(head, resolvedText(req, c.Params), tail)
}

func binaryMessages(c *BinaryConfig, req *abi.NodeRequest) []abi.Message {
	head := "Decide whether the criterion below holds for the input that follows it.\n\nCriterion:\n" + strings.TrimSpace(c.Criteria)
	tail := `Return only a JSON object with exactly two keys, in this order: "reason", a concise explanation citing specific details of the input, then "verdict", the boolean true (the criterion holds) or false (it does not). No other text.` +
		"\nExample JSON:\n" + `{"reason": "<your concise reason>", "verdict": true}`
	return messages(head, resolvedText(req, c.Params), tail)
}

func choiceMessages(c *ChoiceConfig, req *abi.NodeRequest) []abi.Message {
	opts, _ := json.Marshal(req.Verdicts)
	head := "Answer the question below about the input that follows it by choosing exactly one of the allowed verdicts.\n\nQuestion:\n" + strings.TrimSpace(c.Criteria) +
		"\n\nAllowed verdicts (copy one exactly): " + string(opts)
	tail := `Return only a JSON object with exactly two keys, in this order: "reason", a concise explanation citing specific details of the input, then "verdict", one of the allowed verdicts, copied exactly. No other text.` +
		"\nExample JSON:\n" + fmt.Sprintf(`{"reason": "<your concise reason>", "verdict": %q}`, req.Verdicts[0])
	return messages(head, resolvedText(req, c.Params), tail)
}

var (
	taskSchema   = json.RawMessage(`{"type":"object","properties":{"output":{"type":"string"}},"required":["output"],"additionalProperties":false}`)
	binarySchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},"verdict":{"type":"boolean"}},"required":["reason","verdict"],"additionalProperties":false}`)
)

func choiceSchema(verdicts []string) json.RawMessage {
	enum, _ := json.Marshal(verdicts)
	return json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},"verdict":{"type":"string","enum":` + string(enum) + `}},"required":["reason","verdict"],"additionalProperties":false}`)
}

func runTask(ctx context.Context, h sdk.Host, c *TaskConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
	resp, err := judge(ctx, h, req, KindTask, taskMessages(c, req), taskSchema)
	if err != nil {
		return nil, err
	}
	var out struct {
		Output *string `json:"output"`
	}
	if err := decode(resp, &out); err != nil || out.Output == nil {
		return nil, abi.Errorf(abi.CodeJudge, "node %s: task reply has no output: %s", req.NodeID, reply(resp))
	}
	return &abi.NodeResult{Output: *out.Output, Details: details(resp)}, nil
}

func runBinary(ctx context.Context, h sdk.Host, c *BinaryConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
	resp, err := judge(ctx, h, req, KindBinary, binaryMessages(c, req), binarySchema)
	if err != nil {
		return nil, err
	}
	var out struct {
		Reason  string `json:"reason"`
		Verdict *bool  `json:"verdict"`
	}
	if err := decode(resp, &out); err != nil || out.Verdict == nil {
		return nil, abi.Errorf(abi.CodeJudge, "node %s: binary reply has no boolean verdict: %s", req.NodeID, reply(resp))
	}
	v := "false"
	if *out.Verdict {
		v = "true"
	}
	return &abi.NodeResult{Verdict: v, Reason: out.Reason, Details: details(resp)}, nil
}

func runChoice(ctx context.Context, h sdk.Host, c *ChoiceConfig, req *abi.NodeRequest) (*abi.NodeResult, error) {
	if len(req.Verdicts) == 0 {
		return nil, abi.Errorf(abi.CodeInvalidConfig, "node %s: a choice node needs verdicts (its children's verdict strings); none were given", req.NodeID)
	}
	resp, err := judge(ctx, h, req, KindChoice, choiceMessages(c, req), choiceSchema(req.Verdicts))
	if err != nil {
		return nil, err
	}
	var out struct {
		Reason  string  `json:"reason"`
		Verdict *string `json:"verdict"`
	}
	if err := decode(resp, &out); err != nil || out.Verdict == nil {
		return nil, abi.Errorf(abi.CodeJudge, "node %s: choice reply has no verdict: %s", req.NodeID, reply(resp))
	}
	if !slices.Contains(req.Verdicts, *out.Verdict) {
		return nil, abi.Errorf(abi.CodeMetric, "node %s: verdict %q is not one of the allowed verdicts %q", req.NodeID, *out.Verdict, req.Verdicts)
	}
	return &abi.NodeResult{Verdict: *out.Verdict, Reason: out.Reason, Details: details(resp)}, nil
}

// judge sends the node's one judge call and returns its response, or the
// fault as the host's *abi.Error.
func judge(ctx context.Context, h sdk.Host, req *abi.NodeRequest, purpose string, msgs []abi.Message, schema json.RawMessage) (*abi.JudgeResponse, error) {
	zero := 0.0
	resp, err := sdk.JudgeOne(ctx, h, abi.JudgeRequest{
		Messages:    msgs,
		Schema:      schema,
		SchemaName:  "dag_" + purpose,
		Temperature: &zero,
		Purpose:     purpose,
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func replyBytes(r *abi.JudgeResponse) []byte {
	if len(r.JSON) > 0 {
		return r.JSON
	}
	return []byte(r.Content)
}

// reply is the reply, clipped for an error message.
func reply(r *abi.JudgeResponse) string {
	const max = 300
	s := string(replyBytes(r))
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

func decode(r *abi.JudgeResponse, v any) error {
	return json.Unmarshal(replyBytes(r), v)
}

func details(r *abi.JudgeResponse) json.RawMessage {
	b, _ := json.Marshal(Details{PromptVersion: PromptVersion, Usage: Usage{
		Model: r.Usage.Model, InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		USD: r.Usage.USD, CacheHit: r.Usage.CacheHit,
	}})
	return b
}

// Package judged is the machinery the first-party verdict kinds share
// (plugins/rag, plugins/content, plugins/agent): one case's judge calls
// through sdk.Host, their usage, a verdict call checked against what the
// case fixes (with one repair that states the problem), the optional prose
// reason call, and the result with its details. It is not internal so
// that the host can digest its source with each kind's.
//
// Invariants: every call is at temperature 0 with a JSON Schema; a judge
// fault is returned as the *abi.Error the host gave, so its code
// (judge_error, budget_exhausted, capability_denied, …) survives; the
// usage of every answered request is recorded, a repaired or failed one
// included; a verdict is normalised once ("Yes." is "yes"), so a score and
// a reason built from it cannot disagree about it.
package judged

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Verdict values.
const (
	Yes = "yes"
	No  = "no"
	Idk = "idk"
)

// Purposes of the shared calls, for the host's accounting.
const (
	PurposeVerdicts = "verdicts"
	PurposeReason   = "reason"
)

// Reason sources, as reported in details.reason_source.
const (
	ReasonFromItems = "items" // built from the verdicts, no judge call
	ReasonFromJudge = "judge" // written by the judge (reason_call)
)

// Verdict is the judgement of one item.
type Verdict struct {
	// Item is what was judged: a statement, claim, sentence, node, context,
	// opinion, instruction, …
	Item string `json:"item"`
	// Node is the retrieval-context node (1-based) a statement comes from
	// (contextual_relevancy).
	Node int `json:"node,omitempty"`
	// Verdict is "yes", "no" or "idk".
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Pass says whether the verdict counts towards the score.
	Pass bool `json:"pass"`
}

// Counts are the verdicts per value.
type Counts struct {
	Yes    int `json:"yes"`
	No     int `json:"no"`
	Idk    int `json:"idk"`
	Total  int `json:"total"`
	Passed int `json:"passed"`
}

// Usage is the accounting of every judge call a case made.
type Usage struct {
	Calls        int         `json:"calls"`
	InputTokens  int         `json:"input_tokens"`
	OutputTokens int         `json:"output_tokens"`
	USD          float64     `json:"usd"`
	CacheHits    int         `json:"cache_hits"`
	PerCall      []CallUsage `json:"per_call"`
}

// CallUsage is the accounting of one judge call.
type CallUsage struct {
	Purpose      string  `json:"purpose"`
	Model        string  `json:"model,omitempty"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	CacheHit     bool    `json:"cache_hit"`
}

func (u *Usage) add(purpose string, a abi.Usage) {
	u.Calls++
	u.InputTokens += a.InputTokens
	u.OutputTokens += a.OutputTokens
	u.USD += a.USD
	if a.CacheHit {
		u.CacheHits++
	}
	u.PerCall = append(u.PerCall, CallUsage{Purpose: purpose, Model: a.Model,
		InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, USD: a.USD, CacheHit: a.CacheHit})
}

// Trail is what every kind's details record of how the score was reached;
// a kind's details embed it.
type Trail struct {
	StrictMode bool `json:"strict_mode,omitempty"`
	// Repaired is true when the first verdict reply was invalid and a repair
	// attempt fixed it; RepairCause says what was wrong.
	Repaired     bool   `json:"repaired,omitempty"`
	RepairCause  string `json:"repair_cause,omitempty"`
	ReasonSource string `json:"reason_source"`
	// ReasonError is the fault of a failed reason call; the reason then
	// comes from the verdicts.
	ReasonError   *abi.Error `json:"reason_error,omitempty"`
	PromptVersion string     `json:"prompt_version"`
	Usage         Usage      `json:"usage"`
	Warnings      []string   `json:"warnings,omitempty"`
}

// Run is one case being measured by one kind.
type Run struct {
	Kind string
	Host sdk.Host
	Req  *abi.MeasureRequest
	// Trail is the kind's details' trail, filled as the calls are made.
	Trail *Trail
	// Prompts are the kind's package's prompt conventions.
	Prompts *Prompts
}

// NewRun starts a case: the trail is reset to its initial state.
func NewRun(kind string, p *Prompts, h sdk.Host, req *abi.MeasureRequest, strict bool, t *Trail) *Run {
	*t = Trail{StrictMode: strict, ReasonSource: ReasonFromItems, PromptVersion: p.Version, Usage: Usage{PerCall: []CallUsage{}}}
	return &Run{Kind: kind, Host: h, Req: req, Trail: t, Prompts: p}
}

// Warn records a warning in the details and logs it.
func (r *Run) Warn(ctx context.Context, w string) {
	r.Trail.Warnings = append(r.Trail.Warnings, w)
	r.Host.Log(ctx, slog.LevelWarn, r.Kind+": "+w, "metric", r.Req.Metric, "case", r.Req.Case.ID)
}

// Errf is a judge_error whose message names the kind.
func (r *Run) Errf(format string, args ...any) *abi.Error {
	return abi.Errorf(abi.CodeJudge, r.Kind+": "+format, args...)
}

// Request is a judge request at temperature 0 whose schema is named
// prefix_purpose (schemaName, when given, instead).
func (r *Run) Request(purpose string, msgs []abi.Message, schema json.RawMessage, schemaName string) abi.JudgeRequest {
	zero := 0.0
	if schemaName == "" {
		schemaName = r.Prompts.SchemaPrefix + purpose
	}
	return abi.JudgeRequest{Messages: msgs, Schema: schema, SchemaName: schemaName, Temperature: &zero, Purpose: purpose}
}

// Judge sends one batch and returns its responses, or the first fault as
// the *abi.Error the host gave. The usage of every answered request is
// recorded.
func (r *Run) Judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	resps, err := r.Host.Judge(ctx, reqs)
	if err != nil {
		var ae *abi.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, r.Errf("%v", err)
	}
	if len(resps) != len(reqs) {
		return nil, r.Errf("host answered %d responses to %d judge requests", len(resps), len(reqs))
	}
	for i := range resps {
		if resps[i].Error == nil {
			r.Trail.Usage.add(reqs[i].Purpose, resps[i].Usage)
		}
	}
	for i := range resps {
		if resps[i].Error != nil {
			return nil, resps[i].Error
		}
	}
	return resps, nil
}

// Checked makes one call (req) whose reply parse checks: it returns the
// problem, or "" when the reply is valid. An invalid reply gets one repair
// (Repair).
func (r *Run) Checked(ctx context.Context, req abi.JudgeRequest, parse func(raw []byte) string, want string) error {
	resps, err := r.Judge(ctx, []abi.JudgeRequest{req})
	if err != nil {
		return err
	}
	raw := ReplyJSON(&resps[0])
	if problem := parse(raw); problem != "" {
		return r.Repair(ctx, req, raw, problem, want, parse)
	}
	return nil
}

// Repair is the one repair attempt of req, whose reply raw parse found
// invalid (problem): the judge is shown its reply, the problem and what is
// wanted ("exactly 3 verdicts, …"); a second invalid reply is a
// judge_error naming both problems.
func (r *Run) Repair(ctx context.Context, req abi.JudgeRequest, raw []byte, problem, want string, parse func(raw []byte) string) error {
	if !r.Trail.Repaired {
		r.Trail.Repaired, r.Trail.RepairCause = true, problem
	} else {
		r.Trail.RepairCause += "; " + problem
	}
	r.Host.Log(ctx, slog.LevelInfo, r.Kind+": invalid "+req.Purpose+" reply, repairing: "+problem, "metric", r.Req.Metric, "case", r.Req.Case.ID)
	again := req
	again.Messages = RepairMessages(req.Messages, string(raw), problem, want)
	resps, err := r.Judge(ctx, []abi.JudgeRequest{again})
	if err != nil {
		return err
	}
	if second := parse(ReplyJSON(&resps[0])); second != "" {
		return r.Errf("invalid %s after one repair attempt: first reply: %s; repair reply: %s", req.Purpose, problem, second)
	}
	return nil
}

// List decodes an extraction reply {key: [string]}, dropping blank items.
func (r *Run) List(resp *abi.JudgeResponse, key string) ([]string, error) {
	var out map[string]*[]string
	raw := ReplyJSON(resp)
	if err := json.Unmarshal(raw, &out); err != nil || out[key] == nil {
		return nil, r.Errf("the %s reply has no %q list: %s", key, key, Clip(raw))
	}
	items := []string{}
	for _, it := range *out[key] {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	return items, nil
}

// ProseReason makes the reason_call: intro describes the setting, summary
// is the built reason, which the reason falls back to. A failed call does
// not fail the case: the score stands, and the fault is recorded in the
// details and logged.
func (r *Run) ProseReason(ctx context.Context, intro string, score float64, summary, noun string) string {
	resps, err := r.Judge(ctx, []abi.JudgeRequest{r.Request(PurposeReason,
		r.Prompts.ReasonMessages(intro, score, summary), ReasonSchema, "")})
	if err == nil {
		var out struct {
			Reason string `json:"reason"`
		}
		raw := ReplyJSON(&resps[0])
		if json.Unmarshal(raw, &out) == nil && strings.TrimSpace(out.Reason) != "" {
			r.Trail.ReasonSource = ReasonFromJudge
			return strings.TrimSpace(out.Reason)
		}
		err = r.Errf("the reason reply has no reason: %s", Clip(raw))
	}
	var ae *abi.Error
	if !errors.As(err, &ae) {
		ae = r.Errf("%v", err)
	}
	r.Trail.ReasonError = ae
	r.Warn(ctx, "reason call failed ("+ae.Error()+"); the reason is built from the "+noun)
	return summary
}

// Result builds the measure result; details is the kind's details (which
// embed the trail). With strict_mode the threshold is 1.
func (r *Run) Result(score float64, reason string, details any) (*abi.MeasureResult, error) {
	threshold := r.Req.Threshold
	if r.Trail.StrictMode {
		threshold = 1
	}
	b, err := json.Marshal(details)
	if err != nil {
		return nil, err
	}
	return &abi.MeasureResult{Score: &score, Success: score >= threshold, Threshold: threshold, Reason: reason, Details: b}, nil
}

// Tally decides each verdict's pass with pass and counts them; failed are
// the indexes of the verdicts that did not pass.
func Tally(vs []Verdict, pass func(verdict string) bool) (c Counts, failed []int) {
	c.Total, failed = len(vs), []int{}
	for i := range vs {
		v := &vs[i]
		switch v.Verdict {
		case Yes:
			c.Yes++
		case No:
			c.No++
		case Idk:
			c.Idk++
		}
		v.Pass = pass(v.Verdict)
		if v.Pass {
			c.Passed++
		} else {
			failed = append(failed, i)
		}
	}
	return c, failed
}

// ReplyJSON is the parsed reply, or the raw content when the host gave none.
func ReplyJSON(r *abi.JudgeResponse) []byte {
	if len(r.JSON) > 0 {
		return r.JSON
	}
	return []byte(r.Content)
}

// Clip shortens a reply for an error message.
func Clip(b []byte) string {
	const max = 300
	s := string(b)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// NormVerdict normalises a verdict (" Yes." is "yes") and says whether it
// is one of values.
func NormVerdict(v string, values []string) (string, bool) {
	val := strings.TrimRight(strings.ToLower(strings.TrimSpace(v)), ".")
	for _, ok := range values {
		if val == ok {
			return val, true
		}
	}
	return val, false
}

// OneOf renders values as `"yes", "no" or "idk"`.
func OneOf(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// TrimPtr is *s trimmed, "" for nil.
func TrimPtr(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// Plural is "1 noun" or "n nouns".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// FormatScore prints a score with at most 4 significant digits: 0.75, 0.6667, 1.
func FormatScore(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// ParseVerdicts decodes {"verdicts": [{verdict, reason}]} for the items,
// each verdict one of values. problem is empty when the reply is valid,
// else says what is wrong, naming the counts.
func ParseVerdicts(raw []byte, items []string, noun string, values []string) (vs []Verdict, problem string) {
	var out struct {
		Verdicts *[]struct {
			Verdict string  `json:"verdict"`
			Reason  *string `json:"reason"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Verdicts == nil {
		return nil, `not a JSON object with a "verdicts" list`
	}
	if got, want := len(*out.Verdicts), len(items); got != want {
		return nil, fmt.Sprintf("%s for %s", Plural(got, "verdict"), Plural(want, noun))
	}
	for i, v := range *out.Verdicts {
		val, ok := NormVerdict(v.Verdict, values)
		if !ok {
			return nil, fmt.Sprintf("verdict %d is %q, not %s", i+1, v.Verdict, OneOf(values))
		}
		vs = append(vs, Verdict{Item: items[i], Verdict: val, Reason: TrimPtr(v.Reason)})
	}
	return vs, ""
}

// ParseItemVerdicts decodes {key: [{<noun>, verdict, reason}]}: verdicts
// that quote the item they judge, for a judge that finds the items itself.
func ParseItemVerdicts(raw []byte, key, noun string, values []string) ([]Verdict, string) {
	var out map[string]*[]map[string]*string
	if err := json.Unmarshal(raw, &out); err != nil || out[key] == nil {
		return nil, fmt.Sprintf("not a JSON object with a %q list", key)
	}
	return ItemVerdicts(*out[key], noun, values, "")
}

// ItemVerdicts decodes a list of {<noun>, verdict, reason}; at prefixes a
// problem ("node 2: ").
func ItemVerdicts(list []map[string]*string, noun string, values []string, at string) ([]Verdict, string) {
	vs := []Verdict{}
	for i, o := range list {
		item := TrimPtr(o[noun])
		if item == "" {
			return nil, fmt.Sprintf("%sverdict %d has no %q", at, i+1, noun)
		}
		val, ok := NormVerdict(TrimPtr(o["verdict"]), values)
		if !ok {
			return nil, fmt.Sprintf("%sverdict %d is %q, not %s", at, i+1, TrimPtr(o["verdict"]), OneOf(values))
		}
		vs = append(vs, Verdict{Item: item, Verdict: val, Reason: TrimPtr(o["reason"])})
	}
	return vs, ""
}

// ListItems writes ` [i] "item" (verdict: reason); …` for the indexes,
// then a full stop.
func ListItems(b *strings.Builder, vs []Verdict, idx []int) {
	for k, i := range idx {
		v := vs[i]
		if k > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(b, " [%d] %q (", i+1, v.Item)
		if v.Node > 0 {
			fmt.Fprintf(b, "node %d, ", v.Node)
		}
		b.WriteString(v.Verdict)
		if v.Reason != "" {
			b.WriteString(": " + v.Reason)
		}
		b.WriteString(")")
	}
	b.WriteString(".")
}

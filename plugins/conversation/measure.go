package conversation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// run is one case being measured.
type run struct {
	h   sdk.Host
	req *abi.MeasureRequest
	d   Details
}

func newRun(kind string, strict bool, h sdk.Host, req *abi.MeasureRequest) *run {
	return &run{h: h, req: req, d: Details{Kind: kind, Verdicts: []Verdict{}, StrictMode: strict, PromptVersion: PromptVersion}}
}

func (r *run) warn(ctx context.Context, w string) {
	r.d.Warnings = append(r.d.Warnings, w)
	r.h.Log(ctx, slog.LevelWarn, r.d.Kind+": "+w, "metric", r.req.Metric, "case", r.req.Case.ID)
}

func (r *run) judgeErr(format string, args ...any) *abi.Error {
	return abi.Errorf(abi.CodeJudge, r.d.Kind+": "+format, args...)
}

func request(purpose string, msgs []abi.Message, schema string) abi.JudgeRequest {
	zero := 0.0
	return abi.JudgeRequest{
		Messages:    msgs,
		Schema:      []byte(schema),
		SchemaName:  "conversation_" + purpose,
		Temperature: &zero,
		Purpose:     purpose,
	}
}

// judge sends one batch (nothing for none) and returns its responses, or
// the first fault as the *abi.Error the host gave (so its code survives).
func (r *run) judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	resps, err := r.h.Judge(ctx, reqs)
	if err != nil {
		var ae *abi.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, r.judgeErr("%v", err)
	}
	if len(resps) != len(reqs) {
		return nil, r.judgeErr("host answered %d responses to %d judge requests", len(resps), len(reqs))
	}
	for i := range resps {
		if resps[i].Error == nil {
			r.d.Usage.add(resps[i].Usage)
		}
	}
	for i := range resps {
		if resps[i].Error != nil {
			return nil, resps[i].Error
		}
	}
	return resps, nil
}

// replyJSON is the parsed reply, or the raw content when the host gave none.
func replyJSON(r *abi.JudgeResponse) []byte {
	if len(r.JSON) > 0 {
		return r.JSON
	}
	return []byte(r.Content)
}

// clip shortens a reply for an error message.
func clip(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// verdict decodes a {reason, verdict} reply; the verdict must be yes or no
// (case and a trailing full stop aside).
func (r *run) verdict(resp *abi.JudgeResponse, what string) (verdict, reason string, err error) {
	var out struct {
		Reason  string  `json:"reason"`
		Verdict *string `json:"verdict"`
	}
	raw := replyJSON(resp)
	if json.Unmarshal(raw, &out) != nil || out.Verdict == nil {
		return "", "", r.judgeErr("the verdict on %s is not a JSON object with a \"verdict\": %s", what, clip(raw))
	}
	v := strings.TrimRight(strings.ToLower(strings.TrimSpace(*out.Verdict)), ".")
	if v != VerdictYes && v != VerdictNo {
		return "", "", r.judgeErr("the verdict on %s is %q, not \"yes\" or \"no\"", what, *out.Verdict)
	}
	return v, strings.TrimSpace(out.Reason), nil
}

// finish scores the verdicts: passed / total, 1 when there is nothing to
// judge (nothing says why), strict mode's 0 below 1. noun names what the
// verdicts count ("assistant turns"), passing what a passing one is.
func (r *run) finish(noun, passing, formula, nothing string) (*abi.MeasureResult, error) {
	r.d.Total = len(r.d.Verdicts)
	var failed []string
	for _, v := range r.d.Verdicts {
		if v.Pass {
			r.d.Passed++
			continue
		}
		where := "«" + clipText(v.Item) + "»"
		if v.Turn > 0 {
			where = "turn " + strconv.Itoa(v.Turn)
		}
		if v.Reason != "" {
			where += ": " + v.Reason
		}
		failed = append(failed, where)
	}
	threshold := r.req.Threshold
	if r.d.StrictMode {
		threshold = 1
	}
	score := 1.0
	var reason string
	if r.d.Total == 0 {
		r.d.Formula = "nothing to judge: 1"
		reason = nothing
	} else {
		score = float64(r.d.Passed) / float64(r.d.Total)
		r.d.Formula = fmt.Sprintf("%s = %d / %d = %s", formula, r.d.Passed, r.d.Total, strconv.FormatFloat(score, 'f', 3, 64))
		reason = fmt.Sprintf("%d of %d %s %s", r.d.Passed, r.d.Total, noun, passing)
		if len(failed) > 0 {
			reason += "; not: " + strings.Join(failed, "; ")
		}
		reason += "."
	}
	if r.d.StrictMode && score < 1 {
		score = 0
		r.d.Formula += "; strict mode: 0"
	}
	details, err := json.Marshal(&r.d)
	if err != nil {
		return nil, err
	}
	return &abi.MeasureResult{Score: &score, Success: score >= threshold, Threshold: threshold, Reason: reason, Details: details}, nil
}

// clipText shortens an item quoted in a reason.
func clipText(s string) string {
	const max = 120
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

func measureKnowledgeRetention(ctx context.Context, h sdk.Host, cfg *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r := newRun(KindKnowledgeRetention, cfg.StrictMode, h, req)
	turns := req.Case.Turns
	var users []int
	var batch []abi.JudgeRequest
	for i, t := range turns {
		if t.Role == abi.RoleUser {
			users = append(users, i)
			batch = append(batch, request(PurposeKnowledge, factsMessages(turns, i), factsSchema))
		}
	}
	resps, err := r.judge(ctx, batch)
	if err != nil {
		return nil, err
	}
	r.d.Knowledge = []Knowledge{}
	for k, i := range users {
		facts, err := r.facts(&resps[k], i+1)
		if err != nil {
			return nil, err
		}
		if facts != nil {
			r.d.Knowledge = append(r.d.Knowledge, Knowledge{Turn: i + 1, Facts: facts})
		}
	}
	// Each assistant turn is judged against the facts of the user turns
	// before it; one with none before it has nothing to forget.
	batch = nil // a new batch: the host may keep the first one
	var judged []int
	for j, t := range turns {
		if t.Role != abi.RoleAssistant {
			continue
		}
		var known []string
		for _, k := range r.d.Knowledge {
			if k.Turn-1 < j {
				known = append(known, string(k.Facts))
			}
		}
		if len(known) == 0 {
			continue
		}
		judged = append(judged, j)
		batch = append(batch, request(PurposeRetention, retentionMessages(t.Content, "["+strings.Join(known, ",")+"]"), verdictSchema))
	}
	if resps, err = r.judge(ctx, batch); err != nil {
		return nil, err
	}
	for k, j := range judged {
		v, reason, err := r.verdict(&resps[k], fmt.Sprintf("turn %d", j+1))
		if err != nil {
			return nil, err
		}
		// "yes" is DeepEval's attrition: the turn forgot or contradicted.
		r.d.Verdicts = append(r.d.Verdicts, Verdict{Turn: j + 1, Item: turns[j].Content, Verdict: v, Reason: reason, Pass: v == VerdictNo})
	}
	return r.finish("assistant turns", "keep what the user said", "no attrition / verdicts",
		"No assistant turn follows a fact the user gave: nothing to forget.")
}

// facts decodes a facts reply: an object of strings and lists of strings,
// kept as the judge wrote it (compact); nil for no facts.
func (r *run) facts(resp *abi.JudgeResponse, turn int) (jsontext.Value, error) {
	var out struct {
		Facts jsontext.Value `json:"facts"`
	}
	raw := replyJSON(resp)
	if json.Unmarshal(raw, &out) != nil || out.Facts.Kind() != '{' {
		return nil, r.judgeErr("the facts of turn %d are not a JSON object with a \"facts\" object: %s", turn, clip(raw))
	}
	var m map[string]jsontext.Value
	if err := json.Unmarshal(out.Facts, &m); err != nil {
		return nil, r.judgeErr("the facts of turn %d: %v", turn, err)
	}
	for k, v := range m {
		var s string
		var list []string
		if json.Unmarshal(v, &s) != nil && json.Unmarshal(v, &list) != nil {
			return nil, r.judgeErr("the fact %q of turn %d is %s, not a string or a list of strings", k, turn, clip(v))
		}
	}
	if len(m) == 0 {
		return nil, nil
	}
	facts := out.Facts.Clone()
	if err := facts.Compact(); err != nil {
		return nil, r.judgeErr("the facts of turn %d: %v", turn, err)
	}
	return facts, nil
}

func measureRoleAdherence(ctx context.Context, h sdk.Host, cfg *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r := newRun(KindRoleAdherence, cfg.StrictMode, h, req)
	turns := req.Case.Turns
	assistant := 0
	for _, t := range turns {
		if t.Role == abi.RoleAssistant {
			assistant++
		}
	}
	if assistant == 0 {
		return r.finish("assistant turns", "keep the role", "", "The conversation has no assistant turn: nothing to judge.")
	}
	resps, err := r.judge(ctx, []abi.JudgeRequest{request(PurposeOutOfCharacter, outOfRoleMessages(turns, req.Case.ChatbotRole), outOfRoleSchema)})
	if err != nil {
		return nil, err
	}
	var out struct {
		OutOfCharacter *[]struct {
			Turn   int    `json:"turn"`
			Reason string `json:"reason"`
		} `json:"out_of_character"`
	}
	raw := replyJSON(&resps[0])
	if json.Unmarshal(raw, &out) != nil || out.OutOfCharacter == nil {
		return nil, r.judgeErr("the reply is not a JSON object with an \"out_of_character\" list: %s", clip(raw))
	}
	broke := map[int]string{}
	for _, o := range *out.OutOfCharacter {
		// Only an assistant turn can break the role: any other number
		// is the judge's slip, reported and not counted (DeepEval counts
		// every entry, so a slip lowers its score).
		switch {
		case o.Turn < 1 || o.Turn > len(turns):
			r.warn(ctx, fmt.Sprintf("the judge lists turn %d out of character; the conversation has turns 1 to %d: not counted", o.Turn, len(turns)))
			continue
		case turns[o.Turn-1].Role != abi.RoleAssistant:
			r.warn(ctx, fmt.Sprintf("the judge lists turn %d out of character, which is a %s turn, not the assistant's: not counted", o.Turn, turns[o.Turn-1].Role))
			continue
		}
		if _, again := broke[o.Turn]; again {
			r.warn(ctx, fmt.Sprintf("the judge lists turn %d out of character twice; it counts once", o.Turn))
			continue
		}
		broke[o.Turn] = strings.TrimSpace(o.Reason)
	}
	for i, t := range turns {
		if t.Role != abi.RoleAssistant {
			continue
		}
		v := Verdict{Turn: i + 1, Item: t.Content, Verdict: "in_character", Pass: true}
		if reason, ok := broke[i+1]; ok {
			v.Verdict, v.Reason, v.Pass = "out_of_character", reason, false
		}
		r.d.Verdicts = append(r.d.Verdicts, v)
	}
	return r.finish("assistant turns", "keep the role", "in character / assistant turns", "")
}

func measureCompleteness(ctx context.Context, h sdk.Host, cfg *Config, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r := newRun(KindConversationCompleteness, cfg.StrictMode, h, req)
	turns := req.Case.Turns
	resps, err := r.judge(ctx, []abi.JudgeRequest{request(PurposeIntentions, intentionsMessages(turns), intentionsSchema)})
	if err != nil {
		return nil, err
	}
	var out struct {
		Intentions *[]string `json:"intentions"`
	}
	raw := replyJSON(&resps[0])
	if json.Unmarshal(raw, &out) != nil || out.Intentions == nil {
		return nil, r.judgeErr("the reply is not a JSON object with an \"intentions\" list: %s", clip(raw))
	}
	r.d.Intentions = []string{}
	var batch []abi.JudgeRequest
	for _, it := range *out.Intentions {
		if it = strings.TrimSpace(it); it != "" {
			r.d.Intentions = append(r.d.Intentions, it)
			batch = append(batch, request(PurposeCompleteness, completenessMessages(turns, it), verdictSchema))
		}
	}
	if resps, err = r.judge(ctx, batch); err != nil {
		return nil, err
	}
	for k, it := range r.d.Intentions {
		v, reason, err := r.verdict(&resps[k], fmt.Sprintf("intention %d", k+1))
		if err != nil {
			return nil, err
		}
		r.d.Verdicts = append(r.d.Verdicts, Verdict{Item: it, Verdict: v, Reason: reason, Pass: v == VerdictYes})
	}
	return r.finish("user intentions", "met", "met / intentions", "The judge found no user intention in the conversation: nothing to meet.")
}

func measureTurnRelevancy(ctx context.Context, h sdk.Host, cfg *TurnRelevancyConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r := newRun(KindTurnRelevancy, cfg.StrictMode, h, req)
	window := cfg.Window
	if window == 0 {
		window = DefaultWindow
	}
	r.d.Window = window
	turns := req.Case.Turns
	units := interactions(turns)
	batch := make([]abi.JudgeRequest, len(units))
	for i := range units {
		from := units[max(0, i-window+1)].start
		batch[i] = request(PurposeRelevancy, relevancyMessages(turns[from:units[i].end]), verdictSchema)
	}
	resps, err := r.judge(ctx, batch)
	if err != nil {
		return nil, err
	}
	for i, u := range units {
		last := u.end - 1 // an interaction ends with an assistant turn
		v, reason, err := r.verdict(&resps[i], fmt.Sprintf("turn %d", last+1))
		if err != nil {
			return nil, err
		}
		r.d.Verdicts = append(r.d.Verdicts, Verdict{Turn: last + 1, Item: turns[last].Content, Verdict: v, Reason: reason, Pass: v == VerdictYes})
	}
	return r.finish("assistant answers", "are relevant", "relevant / windows", "The conversation has no user turn answered by the assistant: nothing to judge.")
}

// span is an interaction: turns[start:end].
type span struct{ start, end int }

// interactions splits turns as DeepEval's get_unit_interactions does: an
// interaction runs from a user turn to the assistant turns answering it
// (with any system or tool turns between); a user turn after an
// assistant turn starts the next one; a last interaction that does not
// end with the assistant, or has no user turn, is not one.
func interactions(turns []abi.Turn) []span {
	var out []span
	cur, hasUser := span{}, false
	for i, t := range turns {
		if cur.end > cur.start && turns[cur.end-1].Role == abi.RoleAssistant && t.Role == abi.RoleUser && hasUser {
			out = append(out, cur)
			cur = span{start: i, end: i + 1}
			continue
		}
		cur.end = i + 1
		if t.Role == abi.RoleUser {
			hasUser = true
		}
	}
	if cur.end-cur.start > 1 && turns[cur.end-1].Role == abi.RoleAssistant && hasUser {
		out = append(out, cur)
	}
	return out
}

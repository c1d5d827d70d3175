package rag

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

// spec is what differs between the kinds once the items are known.
type spec struct {
	kind   string
	noun   string // "statement", "claim"
	passes string // what a passing item is: "relevant to the input"
	// values are the verdicts the judge may give; schema is the verdict
	// reply's JSON Schema, which lists them.
	values     []string
	schema     json.RawMessage
	schemaName string
	// pass says whether a verdict counts towards the score.
	pass func(verdict string, s *setup) bool
	// reasonIntro opens the reason_call prompt.
	reasonIntro func(req *abi.MeasureRequest, s *setup) string
}

// yesIdk is the verdict set of the statement metrics.
var yesIdk = []string{VerdictYes, VerdictNo, VerdictIdk}

// idkPasses is the pass rule of the statement metrics: "yes", and "idk"
// unless idk_counts_as is "no".
func idkPasses(v string, s *setup) bool {
	return v == VerdictYes || (v == VerdictIdk && s.idkPass)
}

// yesPasses is the pass rule of the yes/no metrics.
func yesPasses(v string, _ *setup) bool { return v == VerdictYes }

var relevancySpec = &spec{
	kind:   KindAnswerRelevancy,
	noun:   "statement",
	passes: "relevant to the input",
	values: yesIdk, schema: verdictsSchema, schemaName: "rag_verdicts", pass: idkPasses,
	reasonIntro: func(req *abi.MeasureRequest, s *setup) string {
		return "An AI answered the input below. Its answer was broken into statements, and a judge decided for each whether it is relevant to the input (yes), irrelevant (no) or ambiguous (idk). " +
			"The score is the share of statements counted as relevant (" + idkRule(s) + ").\n\nInput:\n" + fenced("INPUT", req.Case.Input)
	},
}

var faithfulnessSpec = &spec{
	kind:   KindFaithfulness,
	noun:   "claim",
	passes: "faithful to the retrieval context",
	values: yesIdk, schema: verdictsSchema, schemaName: "rag_verdicts", pass: idkPasses,
	reasonIntro: func(_ *abi.MeasureRequest, s *setup) string {
		return "An AI's answer was broken into factual claims, and a judge decided for each whether the retrieval context supports it (yes), contradicts it (no) or does not mention it (idk). " +
			"The score is the share of claims counted as faithful (" + idkRule(s) + ")."
	},
}

func idkRule(s *setup) string {
	if s.idkPass {
		return `"yes" and "idk" count`
	}
	return `only "yes" counts`
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func measureRelevancy(ctx context.Context, h sdk.Host, cfg *AnswerRelevancyConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	s, err := resolveRelevancy(cfg)
	if err != nil {
		return nil, err
	}
	r := newRun(relevancySpec, s, h, req)
	resps, err := r.judge(ctx, []abi.JudgeRequest{
		request(PurposeStatements, statementsMessages(req.Case.ActualOutput), statementsSchema),
	})
	if err != nil {
		return nil, err
	}
	statements, err := r.list(&resps[0], "statements")
	if err != nil {
		return nil, err
	}
	r.d.Statements = statements
	if len(statements) == 0 {
		return r.empty(ctx)
	}
	vs, err := r.verdicts(ctx, relevancyVerdictMessages(req.Case.Input, statements), statements)
	if err != nil {
		return nil, err
	}
	return r.finish(ctx, vs)
}

func measureFaithfulness(ctx context.Context, h sdk.Host, cfg *FaithfulnessConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	s, err := resolveFaithfulness(cfg)
	if err != nil {
		return nil, err
	}
	r := newRun(faithfulnessSpec, s, h, req)
	chunks := req.Case.RetrievalContext
	batch := []abi.JudgeRequest{request(PurposeClaims, claimsMessages(req.Case.ActualOutput), claimsSchema)}
	if s.truths {
		// Independent of the claims: one batch, run concurrently by the host.
		batch = append(batch, request(PurposeTruths, truthsMessages(chunks, s.truthsLimit), truthsSchema))
	}
	resps, err := r.judge(ctx, batch)
	if err != nil {
		return nil, err
	}
	claims, err := r.list(&resps[0], "claims")
	if err != nil {
		return nil, err
	}
	r.d.Claims = claims
	source := contextText(chunks)
	if s.truths {
		truths, err := r.list(&resps[1], "truths")
		if err != nil {
			return nil, err
		}
		if s.truthsLimit > 0 && len(truths) > s.truthsLimit {
			r.warn(ctx, fmt.Sprintf("the judge returned %d truths; truths_limit is %d, so the first %d are kept", len(truths), s.truthsLimit, s.truthsLimit))
			truths = truths[:s.truthsLimit]
		}
		if len(truths) == 0 {
			r.warn(ctx, "the judge extracted no truths from retrieval_context; the claims are judged against the retrieval context itself")
		} else {
			r.d.Truths = truths
			source = strings.TrimSuffix(numbered(truths), "\n")
		}
	}
	if len(claims) == 0 {
		return r.empty(ctx)
	}
	vs, err := r.verdicts(ctx, faithfulnessVerdictMessages(source, claims), claims)
	if err != nil {
		return nil, err
	}
	return r.finish(ctx, vs)
}

// run is one case being measured.
type run struct {
	sp  *spec
	s   *setup
	h   sdk.Host
	req *abi.MeasureRequest
	d   Details
	// schema, when set, is this case's verdict schema (bounded to its
	// number of nodes) in place of the kind's.
	schema json.RawMessage
}

func newRun(sp *spec, s *setup, h sdk.Host, req *abi.MeasureRequest) *run {
	return &run{sp: sp, s: s, h: h, req: req, d: Details{
		Kind: sp.kind, Verdicts: []Verdict{}, Failed: []int{},
		IdkCountsAs: s.idkCountsAs(), StrictMode: s.strict, ReasonSource: ReasonFromItems,
		PromptVersion: PromptVersion, Usage: Usage{PerCall: []CallUsage{}},
	}}
}

func (r *run) warn(ctx context.Context, w string) {
	r.d.Warnings = append(r.d.Warnings, w)
	r.h.Log(ctx, slog.LevelWarn, r.sp.kind+": "+w, "metric", r.req.Metric, "case", r.req.Case.ID)
}

func (r *run) judgeErr(format string, args ...any) *abi.Error {
	return abi.Errorf(abi.CodeJudge, r.sp.kind+": "+format, args...)
}

func request(purpose string, msgs []abi.Message, schema json.RawMessage) abi.JudgeRequest {
	zero := 0.0
	return abi.JudgeRequest{
		Messages:    msgs,
		Schema:      schema,
		SchemaName:  "rag_" + purpose,
		Temperature: &zero,
		Purpose:     purpose,
	}
}

// verdictRequest is the kind's verdict call: its schema, under its name.
func (r *run) verdictRequest(msgs []abi.Message) abi.JudgeRequest {
	schema := r.sp.schema
	if r.schema != nil {
		schema = r.schema
	}
	q := request(PurposeVerdicts, msgs, schema)
	q.SchemaName = r.sp.schemaName
	return q
}

// judge sends one batch and returns its responses, or the first fault as
// the *abi.Error the host gave (so its code survives). The usage of every
// answered request is recorded.
func (r *run) judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
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
			r.d.Usage.add(reqs[i].Purpose, resps[i].Usage)
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
	s := string(b)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// list decodes an extraction reply {key: [string]}, dropping blank items.
func (r *run) list(resp *abi.JudgeResponse, key string) ([]string, error) {
	var out map[string]*[]string
	raw := replyJSON(resp)
	if err := json.Unmarshal(raw, &out); err != nil || out[key] == nil {
		return nil, r.judgeErr("the %s reply has no %q list: %s", key, key, clip(raw))
	}
	items := []string{}
	for _, it := range *out[key] {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	return items, nil
}

// parseVerdicts decodes a verdict reply for n items, each verdict one of
// values. problem is empty when the reply is valid, else says what is
// wrong, naming the counts.
func parseVerdicts(raw []byte, items []string, noun string, values []string) (vs []Verdict, problem string) {
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
		return nil, fmt.Sprintf("%s for %s", plural(got, "verdict"), plural(want, noun))
	}
	for i, v := range *out.Verdicts {
		val, ok := normVerdict(v.Verdict, values)
		if !ok {
			return nil, fmt.Sprintf("verdict %d is %q, not %s", i+1, v.Verdict, oneOf(values))
		}
		vs = append(vs, Verdict{Item: items[i], Verdict: val, Reason: trimPtr(v.Reason)})
	}
	return vs, ""
}

// normVerdict normalises a verdict (" Yes." is "yes") and says whether it
// is one of values. Score and reason are built from the same normalised
// value, so they cannot disagree about a verdict.
func normVerdict(v string, values []string) (string, bool) {
	val := strings.TrimRight(strings.ToLower(strings.TrimSpace(v)), ".")
	for _, ok := range values {
		if val == ok {
			return val, true
		}
	}
	return val, false
}

// oneOf renders values as `"yes", "no" or "idk"`.
func oneOf(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func trimPtr(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// verdicts makes the one batched verdict call for all items and checks the
// reply; an invalid reply gets one repair attempt with the problem stated.
func (r *run) verdicts(ctx context.Context, msgs []abi.Message, items []string) ([]Verdict, error) {
	var vs []Verdict
	err := r.checked(ctx, msgs, func(raw []byte) string {
		var problem string
		vs, problem = parseVerdicts(raw, items, r.sp.noun, r.sp.values)
		return problem
	}, fmt.Sprintf("exactly %d verdicts, one per %s, in the order of the numbered list, each verdict %s", len(items), r.sp.noun, oneOf(r.sp.values)))
	return vs, err
}

// checked makes one verdict call whose reply parse checks (it returns
// the problem, or "" when the reply is valid). An invalid reply gets one
// repair attempt that shows the judge its reply, the problem and what is
// wanted ("exactly 3 verdicts, …"); a second invalid reply is a
// judge_error naming both problems.
func (r *run) checked(ctx context.Context, msgs []abi.Message, parse func(raw []byte) string, want string) error {
	resps, err := r.judge(ctx, []abi.JudgeRequest{r.verdictRequest(msgs)})
	if err != nil {
		return err
	}
	raw := replyJSON(&resps[0])
	problem := parse(raw)
	if problem == "" {
		return nil
	}
	r.d.Repaired, r.d.RepairCause = true, problem
	r.h.Log(ctx, slog.LevelInfo, r.sp.kind+": invalid verdict reply, repairing: "+problem, "metric", r.req.Metric, "case", r.req.Case.ID)
	resps, err = r.judge(ctx, []abi.JudgeRequest{r.verdictRequest(repairMessages(msgs, string(raw), problem, want))})
	if err != nil {
		return err
	}
	if again := parse(replyJSON(&resps[0])); again != "" {
		return r.judgeErr("invalid verdicts after one repair attempt: first reply: %s; repair reply: %s", problem, again)
	}
	return nil
}

// empty is the result of a case whose actual output has no items.
func (r *run) empty(ctx context.Context) (*abi.MeasureResult, error) {
	reason := "no " + r.sp.noun + "s"
	r.warn(ctx, "the judge found no "+r.sp.noun+"s in actual_output; score 1 ("+reason+")")
	r.d.Formula = reason + ": score 1"
	return r.result(1, reason)
}

// tally decides each verdict's pass with the kind's rule and counts them.
func (r *run) tally(vs []Verdict) Counts {
	c := Counts{Total: len(vs)}
	for i := range vs {
		v := &vs[i]
		switch v.Verdict {
		case VerdictYes:
			c.Yes++
		case VerdictNo:
			c.No++
		case VerdictIdk:
			c.Idk++
		}
		v.Pass = r.sp.pass(v.Verdict, r.s)
		if v.Pass {
			c.Passed++
		} else {
			r.d.Failed = append(r.d.Failed, i)
		}
	}
	r.d.Verdicts, r.d.Counts = vs, c
	return c
}

// finish scores the verdicts of a statement metric and builds the reason.
func (r *run) finish(ctx context.Context, vs []Verdict) (*abi.MeasureResult, error) {
	c := r.tally(vs)
	ratio := float64(c.Passed) / float64(c.Total)
	if r.s.idkPass {
		r.d.Formula = fmt.Sprintf("(yes + idk) / n = (%d + %d) / %d = %s", c.Yes, c.Idk, c.Total, formatScore(ratio))
	} else {
		r.d.Formula = fmt.Sprintf("yes / n = %d / %d = %s", c.Yes, c.Total, formatScore(ratio))
	}
	score := ratio
	if r.s.strict {
		score = 0
		if c.Passed == c.Total {
			score = 1
		}
		r.d.Formula += fmt.Sprintf("; strict_mode: 1 only if every verdict passes → %s", formatScore(score))
	}

	reason := r.itemsReason()
	if r.s.reasonCall {
		reason = r.proseReason(ctx, score, reason)
	}
	return r.result(score, reason)
}

// itemsReason is the deterministic reason: the counts, then every failing
// item with its verdict and the judge's reason.
func (r *run) itemsReason() string {
	c, noun := r.d.Counts, r.sp.noun
	var b strings.Builder
	if c.Passed == c.Total {
		if c.Total == 1 {
			fmt.Fprintf(&b, "The only %s is %s", noun, r.sp.passes)
		} else {
			fmt.Fprintf(&b, "All %d %ss are %s", c.Total, noun, r.sp.passes)
		}
	} else {
		fmt.Fprintf(&b, "%d of %s count as %s", c.Passed, plural(c.Total, noun), r.sp.passes)
	}
	if r.s.idkPass && c.Idk > 0 {
		fmt.Fprintf(&b, ` (%d "idk" counted as passing)`, c.Idk)
	}
	b.WriteString(".")
	if len(r.d.Failed) > 0 {
		fmt.Fprintf(&b, " Failing %ss:", noun)
		for k, i := range r.d.Failed {
			v := r.d.Verdicts[i]
			if k > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " [%d] %q (%s", i+1, v.Item, v.Verdict)
			if v.Reason != "" {
				b.WriteString(": " + v.Reason)
			}
			b.WriteString(")")
		}
		b.WriteString(".")
		if r.s.strict {
			b.WriteString(" strict_mode: score 0 because not every verdict passes.")
		}
	}
	return b.String()
}

// proseReason makes the reason_call. A failed call does not fail the case:
// the score stands, the reason falls back to the items, and the fault is
// recorded in the details and logged.
func (r *run) proseReason(ctx context.Context, score float64, fallback string) string {
	resps, err := r.judge(ctx, []abi.JudgeRequest{request(PurposeReason,
		reasonMessages(r.sp.reasonIntro(r.req, r.s), score, fallback), reasonSchema)})
	if err == nil {
		var out struct {
			Reason string `json:"reason"`
		}
		raw := replyJSON(&resps[0])
		if json.Unmarshal(raw, &out) == nil && strings.TrimSpace(out.Reason) != "" {
			r.d.ReasonSource = ReasonFromJudge
			return strings.TrimSpace(out.Reason)
		}
		err = r.judgeErr("the reason reply has no reason: %s", clip(raw))
	}
	var ae *abi.Error
	if !errors.As(err, &ae) {
		ae = r.judgeErr("%v", err)
	}
	r.d.ReasonError = ae
	r.warn(ctx, "reason call failed ("+ae.Error()+"); the reason is built from the failing "+r.sp.noun+"s")
	return fallback
}

func (r *run) result(score float64, reason string) (*abi.MeasureResult, error) {
	threshold := r.req.Threshold
	if r.s.strict {
		threshold = 1
	}
	details, err := json.Marshal(r.d)
	if err != nil {
		return nil, err
	}
	return &abi.MeasureResult{
		Score:     &score,
		Success:   score >= threshold,
		Threshold: threshold,
		Reason:    reason,
		Details:   details,
	}, nil
}

// formatScore prints a score with at most 4 significant digits: 0.75, 0.6667, 1.
func formatScore(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

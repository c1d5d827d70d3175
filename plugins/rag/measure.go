package rag

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
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

func plural(n int, noun string) string { return judged.Plural(n, noun) }

func measureRelevancy(ctx context.Context, h sdk.Host, cfg *AnswerRelevancyConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	s, err := resolveRelevancy(cfg)
	if err != nil {
		return nil, err
	}
	r := newRun(relevancySpec, s, h, req)
	resps, err := r.judge(ctx, []abi.JudgeRequest{
		r.Request(PurposeStatements, statementsMessages(req.Case.ActualOutput), statementsSchema, ""),
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
	batch := []abi.JudgeRequest{r.Request(PurposeClaims, claimsMessages(req.Case.ActualOutput), claimsSchema, "")}
	if s.truths {
		// Independent of the claims: one batch, run concurrently by the host.
		batch = append(batch, r.Request(PurposeTruths, truthsMessages(chunks, s.truthsLimit), truthsSchema, ""))
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
	*judged.Run
	sp  *spec
	s   *setup
	req *abi.MeasureRequest
	d   Details
	// schema, when set, is this case's verdict schema (bounded to its
	// number of nodes) in place of the kind's.
	schema json.RawMessage
}

func newRun(sp *spec, s *setup, h sdk.Host, req *abi.MeasureRequest) *run {
	r := &run{sp: sp, s: s, req: req, d: Details{
		Kind: sp.kind, Verdicts: []Verdict{}, Failed: []int{}, IdkCountsAs: s.idkCountsAs(),
	}}
	r.Run = judged.NewRun(sp.kind, prompts, h, req, s.strict, &r.d.Trail)
	return r
}

func (r *run) warn(ctx context.Context, w string) { r.Warn(ctx, w) }

// verdictRequest is the kind's verdict call: its schema, under its name.
func (r *run) verdictRequest(msgs []abi.Message) abi.JudgeRequest {
	schema := r.sp.schema
	if r.schema != nil {
		schema = r.schema
	}
	return r.Request(PurposeVerdicts, msgs, schema, r.sp.schemaName)
}

func (r *run) judge(ctx context.Context, reqs []abi.JudgeRequest) ([]abi.JudgeResponse, error) {
	return r.Judge(ctx, reqs)
}

func (r *run) list(resp *abi.JudgeResponse, key string) ([]string, error) { return r.List(resp, key) }

// verdicts makes the one batched verdict call for all items and checks the
// reply; an invalid reply gets one repair attempt with the problem stated.
func (r *run) verdicts(ctx context.Context, msgs []abi.Message, items []string) ([]Verdict, error) {
	var vs []Verdict
	err := r.checked(ctx, msgs, func(raw []byte) string {
		var problem string
		vs, problem = judged.ParseVerdicts(raw, items, r.sp.noun, r.sp.values)
		return problem
	}, fmt.Sprintf("exactly %d verdicts, one per %s, in the order of the numbered list, each verdict %s", len(items), r.sp.noun, judged.OneOf(r.sp.values)))
	return vs, err
}

// checked makes the kind's verdict call, checked by parse (judged.Run.Checked).
func (r *run) checked(ctx context.Context, msgs []abi.Message, parse func(raw []byte) string, want string) error {
	return r.Checked(ctx, r.verdictRequest(msgs), parse, want)
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
	c, failed := judged.Tally(vs, func(v string) bool { return r.sp.pass(v, r.s) })
	r.d.Verdicts, r.d.Counts, r.d.Failed = vs, c, failed
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

// proseReason makes the reason_call; a failed call keeps the score and
// the reason built from the items.
func (r *run) proseReason(ctx context.Context, score float64, fallback string) string {
	return r.ProseReason(ctx, r.sp.reasonIntro(r.req, r.s), score, fallback, "failing "+r.sp.noun+"s")
}

func (r *run) result(score float64, reason string) (*abi.MeasureResult, error) {
	return r.Result(score, reason, &r.d)
}

func formatScore(v float64) string { return judged.FormatScore(v) }

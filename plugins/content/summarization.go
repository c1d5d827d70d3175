package content

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/sdk"
)

// SummarizationKind returns the summarization metric kind.
func SummarizationKind() *sdk.MetricKind[SummarizationConfig] {
	return &sdk.MetricKind[SummarizationConfig]{
		Name:           KindSummarization,
		Description:    "Summarization: min(alignment, coverage) of a summary (actual_output) of an original text (input): its claims judged against the original, and closed questions the original answers answered from the summary",
		RequiredFields: []string{abi.FieldInput, abi.FieldActualOutput},
		Validate:       validateSummarization,
		Measure:        measureSummarization,
	}
}

var yesNoIdk = []string{judged.Yes, judged.No, judged.Idk}

func measureSummarization(ctx context.Context, h sdk.Host, cfg *SummarizationConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	if err := validateSummarization(cfg); err != nil {
		return nil, err
	}
	n := cfg.N
	if n == 0 {
		n = defaultQuestions
	}
	r := newKindRun(KindSummarization, h, req, cfg.StrictMode, cfg.ReasonCall)
	original, summary := req.Case.Input, req.Case.ActualOutput

	// Batch 1: the summary's claims and, unless configured, the questions:
	// independent, so the host runs them concurrently.
	batch := []abi.JudgeRequest{r.Request(PurposeClaims, claimsMessages(summary), judged.ListSchema("claims"), "")}
	questions := cfg.AssessmentQuestions
	r.d.QuestionsFrom = "config"
	if len(questions) == 0 {
		r.d.QuestionsFrom = "judge"
		batch = append(batch, r.Request(PurposeQuestions, questionsMessages(original, n), questionsSchema(n), ""))
	}
	resps, err := r.Judge(ctx, batch)
	if err != nil {
		return nil, err
	}
	claims, err := r.List(&resps[0], "claims")
	if err != nil {
		return nil, err
	}
	if len(questions) == 0 {
		if questions, err = r.List(&resps[1], "questions"); err != nil {
			return nil, err
		}
		if len(questions) > n {
			r.Warn(ctx, fmt.Sprintf("the judge wrote %d questions for n = %d; the first %d are kept", len(questions), n, n))
			questions = questions[:n]
		}
		if len(questions) == 0 {
			return nil, r.Errf("the judge wrote no assessment question from the original text")
		}
	}

	// Batch 2: the alignment verdicts and the questions answered from each
	// text, each call seeing only its own text.
	batch = []abi.JudgeRequest{
		r.Request(PurposeAnswers, answersMessages("ORIGINAL TEXT", original, questions), answersSchema(len(questions)), ""),
		r.Request(PurposeAnswers, answersMessages("SUMMARY", summary, questions), answersSchema(len(questions)), ""),
	}
	if len(claims) > 0 {
		batch = append(batch, r.Request(PurposeVerdicts, alignmentMessages(original, claims),
			judged.CountedVerdictsSchema(yesNoIdk, len(claims)), "content_summary_verdicts"))
	}
	if resps, err = r.Judge(ctx, batch); err != nil {
		return nil, err
	}
	// Each reply checked, an invalid one repaired alone: the others stand.
	var origAns, sumAns []string
	for i, dst := range []*[]string{&origAns, &sumAns} {
		parse := func(raw []byte) string {
			var problem string
			*dst, problem = parseAnswers(raw, len(questions))
			return problem
		}
		if raw := judged.ReplyJSON(&resps[i]); parse(raw) != "" {
			want := fmt.Sprintf(`exactly %d answers, one per question, in the order of the numbered list, each "yes", "no" or "idk"`, len(questions))
			if err := r.Repair(ctx, batch[i], raw, parse(raw), want, parse); err != nil {
				return nil, err
			}
		}
	}
	var alignment float64
	var alignFormula string
	if len(claims) == 0 {
		r.Warn(ctx, "the judge found no claims in the summary; alignment 0")
		alignFormula = "alignment: no claims, 0"
	} else {
		var vs []judged.Verdict
		parse := func(raw []byte) string {
			var problem string
			vs, problem = judged.ParseVerdicts(raw, claims, "claim", yesNoIdk)
			return problem
		}
		if raw := judged.ReplyJSON(&resps[2]); parse(raw) != "" {
			want := fmt.Sprintf(`exactly %d verdicts, one per claim, in the order of the numbered list, each verdict "yes", "no" or "idk"`, len(claims))
			if err := r.Repair(ctx, batch[2], raw, parse(raw), want, parse); err != nil {
				return nil, err
			}
		}
		c, failed := judged.Tally(vs, func(v string) bool { return v == judged.Yes })
		r.d.Verdicts, r.d.Counts, r.d.Failed = vs, c, failed
		alignment = float64(c.Yes) / float64(c.Total)
		alignFormula = fmt.Sprintf("alignment = yes / claims = %d / %d = %s", c.Yes, c.Total, judged.FormatScore(alignment))
	}

	counted, covered := 0, 0
	for i, q := range questions {
		qa := Question{Question: q, Original: origAns[i], Summary: sumAns[i]}
		qa.Counted = qa.Original == judged.Yes
		qa.Covered = qa.Counted && qa.Summary == judged.Yes
		if qa.Counted {
			counted++
		}
		if qa.Covered {
			covered++
		}
		r.d.Questions = append(r.d.Questions, qa)
	}
	var coverage float64
	var coverFormula string
	if counted == 0 {
		r.Warn(ctx, "the original text answers no assessment question \"yes\"; coverage 0")
		coverFormula = "coverage: no question the original answers \"yes\", 0"
	} else {
		coverage = float64(covered) / float64(counted)
		coverFormula = fmt.Sprintf("coverage = summary yes / original yes = %d / %d = %s", covered, counted, judged.FormatScore(coverage))
	}
	r.d.Alignment, r.d.Coverage = &alignment, &coverage
	score := min(alignment, coverage)
	r.d.Formula = fmt.Sprintf("min(alignment, coverage) = min(%s, %s) = %s; %s; %s",
		judged.FormatScore(alignment), judged.FormatScore(coverage), judged.FormatScore(score), alignFormula, coverFormula)
	return r.conclude(ctx, score, summarizationReason(&r.d, alignment, coverage),
		"A summary was judged on alignment (the share of its claims the original text supports) and coverage (the share of closed questions the original answers \"yes\" that the summary answers \"yes\" too). The score is the lower of the two.",
		"failing claims and questions")
}

func summarizationReason(d *Details, alignment, coverage float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Alignment %s, coverage %s.", judged.FormatScore(alignment), judged.FormatScore(coverage))
	if len(d.Failed) > 0 {
		b.WriteString(" Claims the original text does not support:")
		for k, i := range d.Failed {
			v := d.Verdicts[i]
			if k > 0 {
				b.WriteString(";")
			}
			label := "contradicted"
			if v.Verdict == judged.Idk {
				label = "not in the original"
			}
			fmt.Fprintf(&b, " [%d] %q (%s", i+1, v.Item, label)
			if v.Reason != "" {
				b.WriteString(": " + v.Reason)
			}
			b.WriteString(")")
		}
		b.WriteString(".")
	}
	var missed []string
	for _, q := range d.Questions {
		if q.Counted && !q.Covered {
			missed = append(missed, fmt.Sprintf("%q", q.Question))
		}
	}
	if len(missed) > 0 {
		b.WriteString(" Questions the original answers and the summary does not: " + strings.Join(missed, "; ") + ".")
	}
	return b.String()
}

// parseAnswers decodes {"answers": ["yes" | "no" | "idk"]} for n questions.
func parseAnswers(raw []byte, n int) ([]string, string) {
	var out struct {
		Answers *[]string `json:"answers"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Answers == nil {
		return nil, `not a JSON object with an "answers" list`
	}
	if len(*out.Answers) != n {
		return nil, fmt.Sprintf("%s for %s", judged.Plural(len(*out.Answers), "answer"), judged.Plural(n, "question"))
	}
	ans := make([]string, n)
	for i, a := range *out.Answers {
		v, ok := judged.NormVerdict(a, yesNoIdk)
		if !ok {
			return nil, fmt.Sprintf("answer %d is %q, not %s", i+1, a, judged.OneOf(yesNoIdk))
		}
		ans[i] = v
	}
	return ans, ""
}

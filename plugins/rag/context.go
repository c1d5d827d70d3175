package rag

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/judged"
	"github.com/agentanvil/anvil/sdk"
)

// The retrieval-context kinds judge every node (or context) of a case in
// ONE verdict call whose reply is checked against the number of nodes, with
// one repair; DeepEval makes one call per node for contextual_relevancy and
// a fixed extra call for the reason in all four.

var yesNo = []string{VerdictYes, VerdictNo}

var precisionSpec = &spec{
	kind: KindContextualPrecision, noun: "node", passes: "useful for the expected output",
	values: yesNo, schemaName: "rag_node_verdicts", pass: yesPasses,
	reasonIntro: func(req *abi.MeasureRequest, _ *setup) string {
		return "A retriever returned the ranked nodes of retrieval context below for an input, and a judge decided for each node whether it was useful (yes) or not (no) in arriving at the expected output. " +
			"The score is the weighted cumulative precision: it is 1 when every useful node is ranked above every node that is not, and lower the further down the useful nodes are.\n\nInput:\n" + fenced("INPUT", req.Case.Input)
	},
}

var recallSpec = &spec{
	kind: KindContextualRecall, noun: "sentence", passes: "attributable to the retrieval context",
	values: yesNo, schema: sentenceVerdictsSchema, schemaName: "rag_sentence_verdicts", pass: yesPasses,
	reasonIntro: func(*abi.MeasureRequest, *setup) string {
		return "The expected output of a case was split into sentences, and a judge decided for each whether it can be attributed to the retrieval context a retriever returned (yes) or not (no). " +
			"The score is the share of sentences that can be attributed."
	},
}

var contextRelevancySpec = &spec{
	kind: KindContextualRelevancy, noun: "statement", passes: "relevant to the input",
	values: yesNo, schemaName: "rag_node_statements", pass: yesPasses,
	reasonIntro: func(req *abi.MeasureRequest, _ *setup) string {
		return "Each node of the retrieval context a retriever returned for the input below was broken into statements, and a judge decided for each statement whether it is relevant to the input (yes) or not (no). " +
			"The score is the share of relevant statements over all nodes.\n\nInput:\n" + fenced("INPUT", req.Case.Input)
	},
}

var hallucinationSpec = &spec{
	kind: KindHallucination, noun: "context", passes: "not contradicted by the actual output",
	values: yesIdk, schemaName: "rag_context_verdicts",
	pass: func(v string, _ *setup) bool { return v != VerdictNo },
	reasonIntro: func(*abi.MeasureRequest, *setup) string {
		return "A judge decided, for each context (ground truth) of a case, whether an AI's actual output agrees with it (yes), contradicts it (no) or does not address it (idk). " +
			"The hallucination rate is the share of contradicted contexts; the score is 1 minus that rate (higher is better)."
	},
}

// ContextualPrecisionKind returns the contextual_precision metric kind.
func ContextualPrecisionKind() *sdk.MetricKind[ContextConfig] {
	return contextKind(KindContextualPrecision,
		"Contextual precision: whether the retrieval-context nodes useful for the expected output are ranked above the others (weighted cumulative precision; every node judged in one call)",
		[]string{abi.FieldInput, abi.FieldExpectedOutput, abi.FieldRetrievalContext}, measurePrecision)
}

// ContextualRecallKind returns the contextual_recall metric kind.
func ContextualRecallKind() *sdk.MetricKind[ContextConfig] {
	return contextKind(KindContextualRecall,
		"Contextual recall: the share of the expected output's sentences that the retrieval context supports (sentences split and judged in one call)",
		[]string{abi.FieldExpectedOutput, abi.FieldRetrievalContext}, measureRecall)
}

// ContextualRelevancyKind returns the contextual_relevancy metric kind.
func ContextualRelevancyKind() *sdk.MetricKind[ContextConfig] {
	return contextKind(KindContextualRelevancy,
		"Contextual relevancy: the share of the retrieval context's statements that are relevant to the input (every node split and judged in one call)",
		[]string{abi.FieldInput, abi.FieldRetrievalContext}, measureContextRelevancy)
}

// HallucinationKind returns the hallucination metric kind.
func HallucinationKind() *sdk.MetricKind[ContextConfig] {
	return contextKind(KindHallucination,
		"Hallucination: 1 minus the share of the case's contexts that the actual output contradicts (every context judged in one call; higher is better)",
		[]string{abi.FieldActualOutput, abi.FieldContext}, measureHallucination)
}

func contextKind(name, desc string, fields []string,
	measure func(context.Context, sdk.Host, *ContextConfig, *abi.MeasureRequest) (*abi.MeasureResult, error)) *sdk.MetricKind[ContextConfig] {
	return &sdk.MetricKind[ContextConfig]{
		Name: name, Description: desc, RequiredFields: fields,
		Validate: func(c *ContextConfig) error {
			_, err := resolveContext(c)
			return err
		},
		Measure: measure,
	}
}

func newContextRun(sp *spec, cfg *ContextConfig, h sdk.Host, req *abi.MeasureRequest) (*run, error) {
	s, err := resolveContext(cfg)
	if err != nil {
		return nil, err
	}
	r := newRun(sp, s, h, req)
	r.d.IdkCountsAs = ""
	return r, nil
}

func measurePrecision(ctx context.Context, h sdk.Host, cfg *ContextConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r, err := newContextRun(precisionSpec, cfg, h, req)
	if err != nil {
		return nil, err
	}
	nodes := req.Case.RetrievalContext
	r.schema = countedVerdictsSchema(yesNo, len(nodes))
	vs, err := r.verdicts(ctx, precisionMessages(req.Case.Input, req.Case.ExpectedOutput, nodes), nodes)
	if err != nil {
		return nil, err
	}
	c := r.tally(vs)
	score, formula := weightedPrecision(vs)
	r.d.Formula = formula
	if c.Yes == 0 {
		r.d.Formula = "no useful node: score 0"
	}
	return r.conclude(ctx, score, r.precisionReason(score))
}

// weightedPrecision is DeepEval's weighted cumulative precision over the
// ranked verdicts: the mean, over the useful nodes, of the precision at
// each one's rank, (Σ_k rel_k · useful_in_top_k / k) / useful; 0 when no
// node is useful. The formula shows the terms as fractions.
func weightedPrecision(vs []Verdict) (float64, string) {
	useful, sum := 0, 0.0
	var terms []string
	for k, v := range vs {
		if !v.Pass {
			continue
		}
		useful++
		sum += float64(useful) / float64(k+1)
		terms = append(terms, fmt.Sprintf("%d/%d", useful, k+1))
	}
	if useful == 0 {
		return 0, ""
	}
	score := sum / float64(useful)
	return score, fmt.Sprintf("Σ precision@k over useful nodes / useful = (%s) / %d = %s", strings.Join(terms, " + "), useful, formatScore(score))
}

// precisionReason names the nodes that cost score: those that are not
// useful and ranked above a useful one.
func (r *run) precisionReason(score float64) string {
	c := r.d.Counts
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %s are useful for the expected output; weighted cumulative precision %s.", c.Yes, plural(c.Total, "node"), formatScore(score))
	last := -1
	for i, v := range r.d.Verdicts {
		if v.Pass {
			last = i
		}
	}
	var above []int
	for _, i := range r.d.Failed {
		if i < last {
			above = append(above, i)
		}
	}
	switch {
	case c.Yes == 0:
		b.WriteString(" No node is useful.")
	case len(above) == 0:
		b.WriteString(" Every useful node is ranked above the others.")
	default:
		b.WriteString(" Ranked above a useful node but not useful:")
		r.listItems(&b, above)
	}
	if r.s.strict && score < 1 {
		b.WriteString(" strict_mode: score 0 because the score is not 1.")
	}
	return b.String()
}

// listItems writes ` [i] "item" (verdict: reason); …` for the indexes.
func (r *run) listItems(b *strings.Builder, idx []int) { judged.ListItems(b, r.d.Verdicts, idx) }

func measureRecall(ctx context.Context, h sdk.Host, cfg *ContextConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r, err := newContextRun(recallSpec, cfg, h, req)
	if err != nil {
		return nil, err
	}
	var vs []Verdict
	err = r.checked(ctx, recallMessages(req.Case.ExpectedOutput, req.Case.RetrievalContext), func(raw []byte) string {
		var problem string
		vs, problem = parseItemVerdicts(raw, "verdicts", "sentence", yesNo)
		if problem == "" && len(vs) == 0 {
			problem = "no sentences: the expected output is not empty"
		}
		return problem
	}, `one verdict per sentence of the expected output, each with the sentence, a verdict "yes" or "no" and a reason`)
	if err != nil {
		return nil, err
	}
	c := r.tally(vs)
	score := float64(c.Yes) / float64(c.Total)
	return r.conclude(ctx, score, r.ratioReason(fmt.Sprintf("yes / n = %d / %d = %s", c.Yes, c.Total, formatScore(score))))
}

var parseItemVerdicts = judged.ParseItemVerdicts

func measureContextRelevancy(ctx context.Context, h sdk.Host, cfg *ContextConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r, err := newContextRun(contextRelevancySpec, cfg, h, req)
	if err != nil {
		return nil, err
	}
	nodes := req.Case.RetrievalContext
	r.schema = nodeStatementsSchema(len(nodes))
	var vs []Verdict
	err = r.checked(ctx, contextRelevancyMessages(req.Case.Input, nodes), func(raw []byte) string {
		var problem string
		vs, problem = parseNodeStatements(raw, len(nodes))
		return problem
	}, fmt.Sprintf(`exactly %d entries in "nodes", one per node of the retrieval context, in order, each with its "statements" (a statement, a verdict "yes" or "no" and a reason each)`, len(nodes)))
	if err != nil {
		return nil, err
	}
	c := r.tally(vs)
	if c.Total == 0 {
		r.warn(ctx, "the judge found no statements in retrieval_context; score 0")
		r.d.Formula = "no statements: score 0"
		return r.conclude(ctx, 0, "The retrieval context makes no statement, so none is relevant to the input.")
	}
	score := float64(c.Yes) / float64(c.Total)
	return r.conclude(ctx, score, r.ratioReason(fmt.Sprintf("relevant / statements = %d / %d = %s", c.Yes, c.Total, formatScore(score))))
}

// parseNodeStatements decodes {"nodes": [{"statements": [...]}]} for n
// nodes into one verdict list, each verdict naming its node (1-based). A
// node may hold no statement.
func parseNodeStatements(raw []byte, n int) ([]Verdict, string) {
	var out struct {
		Nodes *[]struct {
			Statements *[]map[string]*string `json:"statements"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Nodes == nil {
		return nil, `not a JSON object with a "nodes" list`
	}
	if got := len(*out.Nodes); got != n {
		return nil, fmt.Sprintf("%s for %s", plural(got, "node entry"), plural(n, "node"))
	}
	vs := []Verdict{}
	for i, node := range *out.Nodes {
		if node.Statements == nil {
			return nil, fmt.Sprintf("node %d has no \"statements\" list", i+1)
		}
		nv, problem := judged.ItemVerdicts(*node.Statements, "statement", yesNo, "node "+strconv.Itoa(i+1)+": ")
		if problem != "" {
			return nil, problem
		}
		for j := range nv {
			nv[j].Node = i + 1
		}
		vs = append(vs, nv...)
	}
	return vs, ""
}

func measureHallucination(ctx context.Context, h sdk.Host, cfg *ContextConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
	r, err := newContextRun(hallucinationSpec, cfg, h, req)
	if err != nil {
		return nil, err
	}
	contexts := req.Case.Context
	r.schema = countedVerdictsSchema(yesIdk, len(contexts))
	vs, err := r.verdicts(ctx, hallucinationMessages(req.Case.ActualOutput, contexts), contexts)
	if err != nil {
		return nil, err
	}
	c := r.tally(vs)
	rate := float64(c.No) / float64(c.Total)
	r.d.HallucinationRate = &rate
	score := 1 - rate
	return r.conclude(ctx, score, r.ratioReason(fmt.Sprintf("1 − no / n = 1 − %d / %d = %s (hallucination rate %s)", c.No, c.Total, formatScore(score), formatScore(rate))))
}

// ratioReason sets the formula and returns the reason of a share-of-items
// kind: the counts, then every failing item.
func (r *run) ratioReason(formula string) string {
	r.d.Formula = formula
	c, noun := r.d.Counts, r.sp.noun
	var b strings.Builder
	if c.Passed == c.Total {
		if c.Total == 1 {
			fmt.Fprintf(&b, "The only %s is %s.", noun, r.sp.passes)
		} else {
			fmt.Fprintf(&b, "All %d %ss are %s.", c.Total, noun, r.sp.passes)
		}
	} else {
		fmt.Fprintf(&b, "%d of %s are %s. Failing %ss:", c.Passed, plural(c.Total, noun), r.sp.passes, noun)
		r.listItems(&b, r.d.Failed)
	}
	if r.s.strict && c.Passed < c.Total {
		b.WriteString(" strict_mode: score 0 because the score is not 1.")
	}
	return b.String()
}

// conclude applies strict_mode (DeepEval's: any score below 1 is 0),
// makes the reason_call if asked, and builds the result.
func (r *run) conclude(ctx context.Context, score float64, reason string) (*abi.MeasureResult, error) {
	if r.s.strict {
		strict := 0.0
		if score == 1 {
			strict = 1
		}
		r.d.Formula += fmt.Sprintf("; strict_mode: 1 only if the score is 1 → %s", formatScore(strict))
		score = strict
	}
	if r.s.reasonCall {
		reason = r.proseReason(ctx, score, reason)
	}
	return r.result(score, reason)
}

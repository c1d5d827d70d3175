package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/dag"
	"github.com/agentanvil/anvil/host/internal/results"
)

//go:embed template.html
var htmlSource string

var htmlTemplate = template.Must(template.New("report.html").Parse(htmlSource))

// Caps on text in the page. Tables show a one-line preview; the full text
// (up to FullTextBytes) is in a <details> block below the row.
const (
	// PreviewRunes is how much of a reason, message or case field a table
	// cell shows.
	PreviewRunes = 240
	// FullTextBytes caps any one text in the page (an output, a stderr, a
	// details document); the run's cases/<id>.json keeps everything.
	FullTextBytes = 64 << 10
)

// HTML writes report.html: a self-contained page (inline CSS and a little
// inline JS for filtering, no external resources) with the run's verdict,
// the per-metric summary and one row per case × metric. Cases are ordered
// by their worst row — a gated failure, an error, an ungated failure, a
// skip, a pass — and otherwise kept in results order; the output depends
// only on the arguments. A CaseResult's Case, when set, is shown too.
func HTML(w io.Writer, s *results.Summary, cases []results.CaseResult) error {
	return writeHTML(w, s, cases, pageExtras{})
}

func writeHTML(w io.Writer, s *results.Summary, cases []results.CaseResult, extras pageExtras) error {
	p := buildPage(s, cases)
	if extras.config != "" {
		// dag render reads the graph from the config; run beside
		// results.jsonl it would find none without -c.
		for gi := range p.Groups {
			for ri := range p.Groups[gi].Rows {
				if d := p.Groups[gi].Rows[ri].DAG; d != nil {
					d.Command += " -c " + shellQuote(extras.config)
				}
			}
		}
	}
	p.LeftOut = extras.leftOut
	addQuality(p, s, extras)
	if err := htmlTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

// text is a possibly long string: Short for a table cell, Full for a
// <details> block. Cut is set when Short is not all of it.
type text struct {
	Short string
	Full  string
	Cut   bool
}

func mkText(s string) text {
	full := capBytes(s, FullTextBytes)
	short, cut := preview(s, PreviewRunes)
	return text{Short: short, Full: full, Cut: cut}
}

type page struct {
	Verdict      string
	Passed       bool
	Notes        []string // where the judges' answers came from, what was not verified
	Cases        int
	Calls        int
	Requests     int
	Attempts     int
	CacheHits    int
	Replayed     int // answered by a recorded judge session, not the cache
	Tokens       int
	InputTokens  int
	OutputTokens int
	USD          string
	// CostNote is the cost's detail: the share of input served from the
	// providers' prompt caches, and whether some calls had no price.
	CostNote     string
	JudgeErrors  int
	PluginErrors int
	MetricErrors int
	ConfigHash   string
	FailedGates  []caseLink // metric name and anchor
	Metrics      []metricView
	MetricNames  []string
	Counts       statusCounts
	Rows         int
	Groups       []caseView
	// LeftOut is what the page says of the cases it does not hold (more
	// than MaxReportCases); nil when it holds them all.
	LeftOut *leftOut
	// Quality is each metric's charts (html_quality.go).
	Quality []qualityCard
	// Compare is this run against another (comparison.go).
	Compare *compareView
}

type statusCounts struct{ Passed, Failed, Error, Skipped int }

// leftOut counts the run's cases the page holds and those it left out,
// by whether every metric passed.
type leftOut struct {
	Shown, Total        int
	Passing, NotPassing int
}

type metricView struct {
	Name, Kind, Anchor       string
	N                        int
	Mean, P50, PassRate      string
	Threshold                string
	Passed, Failed, Errors   int
	Skipped                  int
	Modes                    string
	Calls, CacheHits, Tokens int
	Replayed                 int
	USD                      string
	// PerCase is USD per verified case; Cached the share of input served
	// from the providers' prompt caches.
	PerCase, Cached string
	Gate            string
	GateClass       string
	SkipNote        string
	FailedCases     []caseLink
	MoreFailed      int
	ErrorKinds      string
	Prepare         *prepareView
	HasNotes        bool
	NoResults       bool // prepared, but no case results of its own (a dag's child metric)
	Gated           bool
}

type caseLink struct{ ID, Anchor string }

type prepareView struct {
	Steps         []string
	StepsSource   string
	PromptVersion string
	Warnings      []string
	Error         string
	Calls         int
	CallsText     string
	Tokens        int
	USD           string
	JSON          string
}

type caseView struct {
	Anchor string
	ID     string
	rank   int
	Fields []fieldView
	Input  *text
	Output *text
	// Conversation is set for a conversational case, shown as its turns.
	Conversation *conversationView
	Rows         []rowView
}

type conversationView struct {
	// LastUser and LastAssistant stand in the case's head where a
	// single-turn case shows its input and output.
	LastUser, LastAssistant *text
	Turns                   []turnView
}

type turnView struct {
	N         int
	Role      string
	Content   text
	Tools     string
	Retrieval string
}

type fieldView struct {
	Name string
	Text text
}

type rowView struct {
	Metric    string
	Kind      string
	Status    string
	Label     string
	Gated     bool
	Score     string
	Threshold string
	Mode      string
	Reason    text
	Error     *errorView
	Details   string
	DAG       *dagView
	Calls     int
	CallsText string
	Tokens    int
	// USD is the judge's cost; Latency the metric's own time, without
	// CompileWait, the time the case waited for its plugin's compile.
	USD         string
	Latency     string
	CompileWait string
	HasMore     bool
}

type errorView struct {
	Class     string
	Code      string
	Message   text
	Plugin    string
	Field     string
	Retryable bool
	Stderr    string
}

type dagView struct {
	Score     string
	Aggregate string
	Error     string
	Nodes     []dagNodeView
	Leaves    []dagLeafView
	Metrics   []dagMetricView
	Mermaid   string
	Command   string
	// SVG draws the whole graph with this case's path (html_quality.go);
	// when it cannot be drawn, SVGNote says why and Mermaid stands in.
	SVG     template.HTML
	SVGNote string
	res     *dag.Result
	// spread is how the case's walks split per node (samples: N), and
	// Walks their number when the drawing notes it (dagsamples.go).
	spread *results.DAGSpread
	Walks  int
}

type dagNodeView struct {
	ID, Kind, Verdict string
	Reason            text
	Output            text
	Error             string
	Calls             int
	CallsText         string
}

type dagLeafView struct {
	NodeID, Verdict, Outcome, Score string
}

type dagMetricView struct {
	Metric, Score, Status, Mode string
	Reason                      text
	Error                       string
}

// rank orders cases on the page: a gated failure (what broke the CI gate)
// first, then errors, ungated failures, skips and passes.
func rank(r rowView) int {
	switch r.Status {
	case results.StatusFailed:
		if r.Gated {
			return 0
		}
		return 2
	case results.StatusSkipped:
		return 3
	case results.StatusPassed:
		return 4
	}
	return 1 // errors, and any status this page does not know
}

func buildPage(s *results.Summary, cases []results.CaseResult) *page {
	p := &page{
		Passed: s.Passed, Cases: s.Cases,
		Calls: s.Judge.Calls, Requests: s.Judge.Requests, Attempts: s.Judge.Attempts, CacheHits: s.Judge.CacheHits,
		Replayed:    s.Judge.Replayed,
		InputTokens: s.Judge.InputTokens, OutputTokens: s.Judge.OutputTokens,
		Tokens: s.Judge.InputTokens + s.Judge.OutputTokens, USD: usd(s.Judge.USD),
		JudgeErrors: s.JudgeErrors, PluginErrors: s.PluginErrors, MetricErrors: s.MetricErrors,
		ConfigHash: s.ConfigHash,
	}
	p.Verdict = strings.ToUpper(s.Verdict)
	for _, j := range s.Judges {
		if j.Note != "" {
			p.Notes = append(p.Notes, "Judge "+j.Name+": "+j.Note)
		}
	}
	for _, why := range s.Unverified {
		p.Notes = append(p.Notes, "Not verified: "+why)
	}
	if s.Incomplete != nil {
		p.Notes = append(p.Notes, "Incomplete: "+s.Incomplete.Reason+" — resume with: "+s.Incomplete.Resume)
	}
	if s.Judge.UsageUnknown > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d judge request(s) had no usage in the reply: their tokens and cost are estimated from the text", s.Judge.UsageUnknown))
	}
	for _, why := range s.Unpriced {
		p.Notes = append(p.Notes, "No USD for "+why)
	}
	p.CostNote = costNote(s.Judge, s.CachedInputShare)

	anchors := make(map[string]string, len(cases))
	for i, c := range cases {
		if _, dup := anchors[c.CaseID]; !dup {
			anchors[c.CaseID] = "case-" + strconv.Itoa(i+1)
		}
	}
	prep := map[string]*results.PrepareSummary{}
	for i := range s.Prepare {
		prep[s.Prepare[i].Metric] = &s.Prepare[i]
	}
	seen := map[string]bool{}
	for _, m := range s.Metrics {
		mv := metricView{
			Name: m.Metric, Kind: m.Kind, N: m.N, Mean: num(m.Mean), P50: num(m.P50), PassRate: pct(m.PassRate),
			Threshold: fmt.Sprintf("%.2f", m.Threshold), Passed: m.Passed, Failed: m.Failed, Errors: m.Errors,
			Skipped: m.Skipped, Modes: modes(m.ScoreModes), Calls: m.Judge.Calls, CacheHits: m.Judge.CacheHits,
			Replayed: m.Judge.Replayed,
			Tokens:   m.Judge.InputTokens + m.Judge.OutputTokens, USD: metricUSD(m), Gated: m.Gated,
		}
		if m.USDPerVerifiedCase != nil {
			mv.PerCase = perCase(m.USDPerVerifiedCase) + "/verified case"
		}
		if m.Judge.CachedInputTokens > 0 {
			mv.Cached = pct(m.CachedInputShare) + " of input cached"
		}
		mv.Anchor = "metric-" + strconv.Itoa(len(p.Metrics)+1)
		mv.Gate, mv.GateClass = gate(m)
		if mv.Gate == "FAIL" {
			p.FailedGates = append(p.FailedGates, caseLink{ID: m.Metric, Anchor: mv.Anchor})
		}
		if m.Skipped > 0 {
			mv.SkipNote = fmt.Sprintf("%d of %d skipped: %s", m.Skipped, m.N, m.SkipReason)
		}
		for _, id := range m.FailedCases {
			mv.FailedCases = append(mv.FailedCases, caseLink{ID: id, Anchor: anchors[id]})
		}
		mv.MoreFailed = m.Failed - len(m.FailedCases)
		mv.ErrorKinds = counts(m.ErrorKinds)
		if ps := prep[m.Metric]; ps != nil {
			mv.Prepare = prepareOf(ps)
		}
		mv.HasNotes = mv.SkipNote != "" || len(mv.FailedCases) > 0 || mv.ErrorKinds != "" || mv.Prepare != nil
		p.Metrics = append(p.Metrics, mv)
		p.MetricNames = append(p.MetricNames, m.Metric)
		seen[m.Metric] = true
	}
	// Prepare records of metrics with no results (every case failed to load,
	// or a child of a dag that never ran) are still worth showing.
	for i := range s.Prepare {
		ps := &s.Prepare[i]
		if !seen[ps.Metric] {
			seen[ps.Metric] = true
			p.Metrics = append(p.Metrics, metricView{
				Name: ps.Metric, Anchor: "metric-" + strconv.Itoa(len(p.Metrics)+1), Kind: "-",
				Mean: "-", P50: "-", PassRate: "-", Threshold: "-", Modes: "-",
				Calls: ps.Usage.Calls, CacheHits: ps.Usage.CacheHits, Tokens: ps.Usage.InputTokens + ps.Usage.OutputTokens,
				USD: usd(ps.Usage.USD), Prepare: prepareOf(ps), HasNotes: true, NoResults: true,
			})
		}
	}

	for i, c := range cases {
		cv := caseView{Anchor: "case-" + strconv.Itoa(i+1), ID: c.CaseID, rank: 4}
		if c.Case != nil {
			cv.Fields = caseFields(c.Case)
			if c.Case.Input != "" {
				t := mkText(c.Case.Input)
				cv.Input = &t
			}
			if c.Case.ActualOutput != "" {
				t := mkText(c.Case.ActualOutput)
				cv.Output = &t
			}
			cv.Conversation = conversationOf(c.Case)
		}
		for _, mr := range c.Metrics {
			rv := rowOf(c.CaseID, mr)
			cv.rank = min(cv.rank, rank(rv))
			switch mr.Status {
			case results.StatusPassed:
				p.Counts.Passed++
			case results.StatusFailed:
				p.Counts.Failed++
			case results.StatusSkipped:
				p.Counts.Skipped++
			default:
				p.Counts.Error++
			}
			if !seen[mr.Metric] {
				seen[mr.Metric] = true
				p.MetricNames = append(p.MetricNames, mr.Metric)
			}
			cv.Rows = append(cv.Rows, rv)
		}
		p.Rows += len(cv.Rows)
		p.Groups = append(p.Groups, cv)
	}
	sort.SliceStable(p.Groups, func(a, b int) bool { return p.Groups[a].rank < p.Groups[b].rank })
	return p
}

// gate is the GATE column of the terminal table.
func gate(m results.MetricSummary) (label, class string) {
	switch m.Verdict {
	case results.VerdictInformational:
		return "info", "info"
	case results.VerdictFailed:
		return "FAIL", "failed"
	case results.VerdictUnverified:
		return "UNVERIFIED", "failed"
	}
	return "ok", "passed"
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func prepareOf(ps *results.PrepareSummary) *prepareView {
	pv := &prepareView{Error: ps.Error, Calls: ps.Usage.Calls, CallsText: calls(ps.Usage.Calls),
		Tokens: ps.Usage.InputTokens + ps.Usage.OutputTokens, USD: usd(ps.Usage.USD)}
	if len(ps.Details) > 0 {
		pv.JSON = prettyJSON(ps.Details)
		var d struct {
			Steps         []string `json:"steps"`
			StepsSource   string   `json:"steps_source"`
			PromptVersion string   `json:"prompt_version"`
			Warnings      []string `json:"warnings"`
		}
		if json.Unmarshal(ps.Details, &d) == nil {
			pv.Steps, pv.StepsSource, pv.PromptVersion, pv.Warnings = d.Steps, d.StepsSource, d.PromptVersion, d.Warnings
		}
	}
	return pv
}

func rowOf(caseID string, mr results.MetricResult) rowView {
	rv := rowView{
		Metric: mr.Metric, Kind: mr.Kind, Status: mr.Status, Gated: mr.Gated,
		Score: num(mr.Score), Threshold: fmt.Sprintf("%.2f", mr.Threshold), Mode: mr.ScoreMode,
		Reason: mkText(mr.Reason), Calls: mr.Usage.Calls, CallsText: calls(mr.Usage.Calls), Tokens: mr.Usage.InputTokens + mr.Usage.OutputTokens,
		Latency: latency(mr.LatencyMS - mr.CompileWaitMS), CompileWait: latency(mr.CompileWaitMS),
	}
	if mr.Usage.Calls > 0 || mr.Usage.USD > 0 {
		rv.USD = usd(mr.Usage.USD)
	}
	switch mr.Status {
	case results.StatusPassed:
		rv.Label = "PASS"
	case results.StatusFailed:
		rv.Label = "FAIL"
	case results.StatusError:
		rv.Label = "ERROR"
	case results.StatusSkipped:
		rv.Label = "SKIP"
	default:
		rv.Label = strings.ToUpper(mr.Status)
		rv.Status = results.StatusError // filter and colour it with the errors
	}
	if mr.Error != nil {
		rv.Error = errorOf(mr.ErrorClass, mr.Error)
	} else if mr.Status == results.StatusError {
		rv.Error = &errorView{Class: mr.ErrorClass, Message: mkText(mr.Reason)}
	}
	if len(mr.Details) > 0 {
		rv.Details = prettyJSON(mr.Details)
		if mr.Kind == "dag" {
			rv.DAG = dagOf(caseID, mr)
		}
	}
	rv.HasMore = rv.Reason.Cut || rv.Details != "" || rv.DAG != nil ||
		(rv.Error != nil && (rv.Error.Message.Cut || rv.Error.Stderr != "" || rv.Error.Plugin != "" || rv.Error.Field != "" || rv.Error.Retryable))
	return rv
}

func errorOf(class string, e *abi.Error) *errorView {
	ev := &errorView{Class: class, Code: string(e.Code), Message: mkText(e.Message), Field: e.Field,
		Retryable: e.Retryable, Stderr: capBytes(e.Stderr, FullTextBytes)}
	switch {
	case e.Plugin != "" && e.Digest != "":
		ev.Plugin = e.Plugin + " (" + e.Digest + ")"
	default:
		ev.Plugin = e.Plugin
	}
	return ev
}

func dagOf(caseID string, mr results.MetricResult) *dagView {
	var res dag.Result
	if json.Unmarshal(mr.Details, &res) != nil || (len(res.Nodes) == 0 && res.Error == "") {
		return nil
	}
	dv := &dagView{res: &res, Score: strconv.FormatFloat(res.Score, 'f', 3, 64), Aggregate: res.Aggregate, Error: res.Error,
		Command: "anvil-host dag render " + shellQuote(mr.Metric) + " --results results.jsonl --case " + shellQuote(caseID), spread: mr.DAGSpread}
	for _, n := range res.Nodes {
		dv.Nodes = append(dv.Nodes, dagNodeView{ID: n.ID, Kind: n.Kind, Verdict: n.Verdict,
			Reason: mkText(n.Reason), Output: mkText(n.Output), Error: capBytes(n.Error, FullTextBytes), Calls: n.JudgeCalls, CallsText: calls(n.JudgeCalls)})
	}
	for _, l := range res.Leaves {
		lv := dagLeafView{NodeID: l.NodeID, Verdict: l.Verdict, Score: strconv.FormatFloat(l.Score, 'f', 3, 64)}
		switch {
		case l.Metric != "":
			lv.Outcome = "metric " + l.Metric
		case l.Points != nil:
			lv.Outcome = "score " + strconv.FormatFloat(*l.Points, 'f', -1, 64) + "/10"
		}
		dv.Leaves = append(dv.Leaves, lv)
	}
	for _, m := range res.Metrics {
		st := "passed"
		if !m.Success {
			st = "failed"
		}
		if m.Error != "" {
			st = "error"
		}
		dv.Metrics = append(dv.Metrics, dagMetricView{Metric: m.Metric, Score: strconv.FormatFloat(m.Score, 'f', 3, 64),
			Status: st, Mode: m.ScoreMode, Reason: mkText(m.Reason), Error: capBytes(m.Error, FullTextBytes)})
	}
	// A Result carries the path, not the graph. Should the engine ever add
	// a rendered flowchart to the details, show that instead.
	var extra struct {
		Mermaid string `json:"mermaid"`
	}
	if json.Unmarshal(mr.Details, &extra) == nil && extra.Mermaid != "" {
		dv.Mermaid = extra.Mermaid
	} else {
		dv.Mermaid = pathMermaid(&res)
	}
	return dv
}

// pathMermaid draws the executed nodes of a dag Result as a Mermaid
// flowchart: nodes in path order (linked invisibly, since the result does
// not record the graph's edges), each fired leaf joined to its node by the
// verdict that fired it, classes taken/failed as in dag.Render.
func pathMermaid(res *dag.Result) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	fmt.Fprintf(&b, "  %%%% executed path: score %s (%s of %d leaves); node order only, graph edges are not in the result\n",
		strconv.FormatFloat(res.Score, 'f', 4, 64), mermaidComment(res.Aggregate), len(res.Leaves))
	idx := map[string]int{}
	var taken, failed []string
	for i, n := range res.Nodes {
		id := "p" + strconv.Itoa(i)
		idx[n.ID] = i
		label := mermaidEsc(n.ID) + "<br/>" + mermaidEsc(n.Kind)
		if n.Verdict != "" {
			label += "<br/>= " + mermaidEsc(n.Verdict)
		}
		open, closing := "[", "]"
		switch n.Kind {
		case "binary", "choice":
			open, closing = "{", "}"
		}
		fmt.Fprintf(&b, "  %s%s\"%s\"%s\n", id, open, label, closing)
		if n.Error != "" {
			failed = append(failed, id)
		} else {
			taken = append(taken, id)
		}
	}
	for i := 1; i < len(res.Nodes); i++ {
		fmt.Fprintf(&b, "  p%d ~~~ p%d\n", i-1, i)
	}
	for i, l := range res.Leaves {
		lid := "l" + strconv.Itoa(i)
		if l.Metric != "" {
			fmt.Fprintf(&b, "  %s([\"metric<br/>%s<br/>%s\"])\n", lid, mermaidEsc(l.Metric), strconv.FormatFloat(l.Score, 'f', 2, 64))
		} else {
			pts := strconv.FormatFloat(l.Score*10, 'f', -1, 64)
			if l.Points != nil {
				pts = strconv.FormatFloat(*l.Points, 'f', -1, 64)
			}
			fmt.Fprintf(&b, "  %s((\"%s/10\"))\n", lid, mermaidEsc(pts))
		}
		taken = append(taken, lid)
		if j, ok := idx[l.NodeID]; ok {
			fmt.Fprintf(&b, "  p%d -->|\"%s\"| %s\n", j, mermaidEsc(l.Verdict), lid)
		}
	}
	b.WriteString("  classDef taken fill:#d1fadf,stroke:#039855,stroke-width:2px\n")
	b.WriteString("  classDef failed fill:#fee4e2,stroke:#d92d20,stroke-width:2px\n")
	if len(taken) > 0 {
		fmt.Fprintf(&b, "  class %s taken\n", strings.Join(taken, ","))
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "  class %s failed\n", strings.Join(failed, ","))
	}
	return b.String()
}

// mermaidEsc makes text safe inside a quoted Mermaid label, as dag.Render does.
var mermaidEsc = strings.NewReplacer(
	"#", "#35;",
	`"`, "#quot;",
	"<", "#lt;",
	">", "#gt;",
	"\r", " ",
	"\n", " ",
).Replace

func mermaidComment(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// conversationOf is a conversational case's turns as the page shows
// them; nil for a single-turn case.
func conversationOf(c *abi.TestCase) *conversationView {
	if !c.Conversational() {
		return nil
	}
	cv := &conversationView{}
	for _, f := range []struct {
		name string
		dst  **text
	}{{abi.FieldLastUserTurn, &cv.LastUser}, {abi.FieldLastAssistantTurn, &cv.LastAssistant}} {
		if s, ok := c.Field(f.name); ok {
			t := mkText(s)
			*f.dst = &t
		}
	}
	for i, t := range c.Turns {
		tv := turnView{N: i + 1, Role: t.Role, Content: mkText(t.Content)}
		if len(t.ToolsCalled) > 0 {
			if b, err := json.MarshalIndent(t.ToolsCalled, "", "  "); err == nil {
				tv.Tools = unescapeHTMLJSON(string(b))
			}
		}
		for j, r := range t.RetrievalContext {
			if j > 0 {
				tv.Retrieval += "\n\n"
			}
			tv.Retrieval += fmt.Sprintf("[%d] %s", j+1, r)
		}
		cv.Turns = append(cv.Turns, tv)
	}
	return cv
}

func caseFields(c *abi.TestCase) []fieldView {
	var out []fieldView
	add := func(name, v string) {
		if v != "" {
			out = append(out, fieldView{Name: name, Text: mkText(v)})
		}
	}
	list := func(name string, items []string) {
		if len(items) == 0 {
			return
		}
		var b strings.Builder
		for i, it := range items {
			if i > 0 {
				b.WriteString("\n\n")
			}
			fmt.Fprintf(&b, "[%d] %s", i+1, it)
		}
		add(name, b.String())
	}
	jsonField := func(name string, v any, empty bool) {
		if empty {
			return
		}
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			add(name, fmt.Sprintf("(%v)", err))
			return
		}
		add(name, string(data))
	}
	add("input", c.Input)
	add("actual_output", c.ActualOutput)
	add("expected_output", c.ExpectedOutput)
	list("context", c.Context)
	list("retrieval_context", c.RetrievalContext)
	jsonField("tools_called", c.ToolsCalled, len(c.ToolsCalled) == 0)
	jsonField("expected_tools", c.ExpectedTools, len(c.ExpectedTools) == 0)
	add("scenario", c.Scenario)
	add("expected_outcome", c.ExpectedOutcome)
	add("chatbot_role", c.ChatbotRole)
	jsonField("extra", c.Extra, len(c.Extra) == 0) // map keys are sorted
	return out
}

// prettyJSON indents raw, keeping its key order, and undoes encoding/json's
// \u003c, \u003e and \u0026 escapes so a reader sees <, > and & (the page
// escapes them for HTML).
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return capBytes(string(raw), FullTextBytes)
	}
	return capBytes(unescapeHTMLJSON(b.String()), FullTextBytes)
}

func unescapeHTMLJSON(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape pair, copied whole
		i++
	}
	return b.String()
}

func calls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return strconv.Itoa(n) + " calls"
}

func latency(ms float64) string {
	switch {
	case ms <= 0:
		return ""
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
}

// preview is s on one line (runs of white space collapsed), at most n runes.
func preview(s string, n int) (string, bool) {
	flat := strings.Join(strings.Fields(s), " ")
	cut := flat != s
	if utf8.RuneCountInString(flat) <= n {
		return flat, cut
	}
	i, count := 0, 0
	for i = range flat {
		if count == n {
			break
		}
		count++
	}
	return strings.TrimRight(flat[:i], " ") + "…", true
}

// capBytes cuts s to at most n bytes on a rune boundary, saying how much
// was left out.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("\n… [%d more bytes; the run's cases/ directory has the full record]", len(s)-i)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// costNote details the run's cost: its cached share of input, and that
// some calls had no price.
func costNote(u results.JudgeUsage, share *float64) string {
	var parts []string
	if u.CachedInputTokens > 0 {
		parts = append(parts, pct(share)+" of input tokens served from the providers' prompt caches")
	}
	if u.Unpriced > 0 {
		parts = append(parts, fmt.Sprintf("at least: %d request(s) had no price", u.Unpriced))
	}
	return strings.Join(parts, " · ")
}

package assert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Values of tool_correctness's evaluation_params (DeepEval's ToolCallParams).
const (
	ParamTool            = "tool"             // the tool's name: always compared
	ParamInputParameters = "input_parameters" // ToolCall.arguments
	ParamOutput          = "output"           // ToolCall.output
)

// Modes of tool_correctness, as details.mode reports them.
const (
	ModeUnordered = "unordered" // best match per expected tool, order ignored (the default)
	ModeOrdered   = "ordered"   // should_consider_ordering: weighted longest common subsequence
	ModeExact     = "exact"     // should_exact_match: the same calls in the same order, or 0
)

// maxTools bounds each tool list: the ordered score's table has one cell
// per pair of an expected and a called tool, and the lists come from the
// dataset.
const maxTools = 1000

// ToolCorrectnessConfig configures tool_correctness. Every field is
// optional; the threshold is the metric's threshold.
type ToolCorrectnessConfig struct {
	EvaluationParams       []string `json:"evaluation_params,omitempty" jsonschema:"enum=tool,enum=input_parameters,enum=output" jsonschema_description:"What is compared besides the tool's name (which always is): input_parameters (the calls' arguments; partial credit for the share of matching keys, as DeepEval) and output (the calls' outputs, equal or not). \"tool\" may be listed and changes nothing."`
	ShouldConsiderOrdering bool     `json:"should_consider_ordering,omitempty" jsonschema_description:"Score the expected tools called in the expected order: the weighted longest common subsequence of the two lists over the number of expected tools."`
	ShouldExactMatch       bool     `json:"should_exact_match,omitempty" jsonschema_description:"Score 1 only when the calls are exactly the expected ones in the same order (names and every compared evaluation_param), else 0. Takes precedence over should_consider_ordering."`
	StrictMode             bool     `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only when the score would be 1, else 0; the threshold is forced to 1."`
}

// ToolMatch pairs an expected tool with the call that matched it.
type ToolMatch struct {
	Expected int     `json:"expected"` // index into expected_tools
	Called   int     `json:"called"`   // index into tools_called
	Name     string  `json:"name"`
	Score    float64 `json:"score"` // 1, or less for arguments that match in part
}

// ToolDetails are MeasureResult.Details of tool_correctness.
type ToolDetails struct {
	Kind             string   `json:"kind"`
	Mode             string   `json:"mode"`
	EvaluationParams []string `json:"evaluation_params"`
	Expected         []string `json:"expected"` // expected tools' names, in order
	Called           []string `json:"called"`   // called tools' names, in order
	// Matches are the expected tools matched, in expected order; Unmatched
	// the indexes of the expected tools no call matched.
	Matches   []ToolMatch `json:"matches"`
	Unmatched []int       `json:"unmatched"`
	// Missing are the expected names never called at all.
	Missing    []string `json:"missing,omitempty"`
	Formula    string   `json:"formula"`
	StrictMode bool     `json:"strict_mode,omitempty"`
}

// tool is a ToolCall decoded for comparison.
type tool struct {
	name      string
	args      any  // decoded arguments; an empty object when absent or null
	output    any  // decoded output
	hasOutput bool // output present and not null
}

// toolSetup is a config resolved.
type toolSetup struct {
	args, output, ordered, exact, strict bool
}

func resolveTools(c *ToolCorrectnessConfig) (*toolSetup, error) {
	s := &toolSetup{ordered: c.ShouldConsiderOrdering, exact: c.ShouldExactMatch, strict: c.StrictMode}
	for i, p := range c.EvaluationParams {
		switch p {
		case ParamTool:
		case ParamInputParameters:
			s.args = true
		case ParamOutput:
			s.output = true
		default:
			return nil, invalid("evaluation_params", fmt.Sprintf("[%d] is %q; want tool, input_parameters or output", i, p))
		}
	}
	return s, nil
}

func (s *toolSetup) params() []string {
	out := []string{ParamTool}
	if s.args {
		out = append(out, ParamInputParameters)
	}
	if s.output {
		out = append(out, ParamOutput)
	}
	return out
}

// ToolCorrectnessKind returns the tool_correctness metric kind.
func ToolCorrectnessKind() *sdk.MetricKind[ToolCorrectnessConfig] {
	return &sdk.MetricKind[ToolCorrectnessConfig]{
		Name:        KindToolCorrectness,
		Description: "Tool correctness (DeepEval's ToolCorrectnessMetric): the share of expected_tools that tools_called matches by name (and optionally arguments and output), unordered, in order, or exactly",
		// tools_called is not required: a case without it is an agent
		// that called no tool, which scores 0, not a case skipped.
		RequiredFields: []string{abi.FieldExpectedTools},
		Validate: func(c *ToolCorrectnessConfig) error {
			_, err := resolveTools(c)
			return err
		},
		Prepare: checkOnly[ToolCorrectnessConfig],
		Measure: func(_ context.Context, _ sdk.Host, c *ToolCorrectnessConfig, req *abi.MeasureRequest) (*abi.MeasureResult, error) {
			s, err := resolveTools(c)
			if err != nil {
				return nil, err
			}
			expected, err := decodeTools(abi.FieldExpectedTools, req.Case.ExpectedTools)
			if err != nil {
				return nil, err
			}
			called, err := decodeTools(abi.FieldToolsCalled, req.Case.ToolsCalled)
			if err != nil {
				return nil, err
			}
			score, reason, d := scoreTools(s, expected, called)
			return result(req, score, s.strict, reason, d)
		},
	}
}

// decodeTools decodes a case's tool list, refusing what cannot be compared
// without guessing: more than maxTools calls, arguments or an output that
// is not one JSON value or repeats a member name.
func decodeTools(field string, calls []abi.ToolCall) ([]tool, error) {
	if len(calls) > maxTools {
		return nil, &abi.Error{Code: abi.CodeMetric, Field: field,
			Message: fmt.Sprintf("tool_correctness: %s lists %d tools; the limit is %d", field, len(calls), maxTools)}
	}
	out := make([]tool, len(calls))
	for i, c := range calls {
		t := tool{name: c.Name, args: map[string]any{}}
		if v, present, err := decodeJSON(c.Arguments); err != nil {
			return nil, &abi.Error{Code: abi.CodeMetric, Field: field,
				Message: fmt.Sprintf("tool_correctness: %s[%d].arguments: %v", field, i, err)}
		} else if present {
			t.args = v
		}
		v, present, err := decodeJSON(c.Output)
		if err != nil {
			return nil, &abi.Error{Code: abi.CodeMetric, Field: field,
				Message: fmt.Sprintf("tool_correctness: %s[%d].output: %v", field, i, err)}
		}
		t.output, t.hasOutput = v, present
		out[i] = t
	}
	return out, nil
}

// number is a JSON number in a canonical form (see canonicalNumber), so
// that equal numbers compare equal whatever their spelling: 1, 1.0, 10e-1.
type number string

// decodeJSON decodes one JSON value into maps, slices, strings, bools,
// numbers and nil. present is false for an absent value or null. A
// repeated member name, invalid UTF-8 or anything after the value is an
// error (jsontext's defaults).
func decodeJSON(raw []byte) (v any, present bool, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, false, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	v, err = decodeValue(dec)
	if err != nil {
		return nil, false, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, false, errors.New("more than one JSON value")
	}
	return v, v != nil, nil
}

func decodeValue(dec *jsontext.Decoder) (any, error) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String()
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		s := []any{}
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		_, err := dec.ReadToken()
		return s, err
	case '0':
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return canonicalNumber(string(raw)), nil
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	}
	return nil, fmt.Errorf("unexpected %v", tok.Kind())
}

// canonicalNumber writes a JSON number as sign, significant digits and
// decimal exponent ("-15e-1" for -1.50), so numbers compare as their exact
// decimal values: 1 = 1.0 = 1e0 (as Python's == on DeepEval's side), 0 =
// -0, and no precision is lost past 2^53. No arithmetic on the exponent
// beyond an int: a number whose exponent does not fit is kept as written.
func canonicalNumber(raw string) number {
	s := raw
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1<<40 || e < -(1<<40) {
			return number(raw)
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	sign := ""
	if neg {
		sign = "-"
	}
	return number(sign + trimmed + "e" + strconv.Itoa(exp))
}

// equalJSON is equality of decoded values: objects by members whatever
// their order, arrays by position, numbers by value. (reflect.DeepEqual
// says the same, several times slower, and the ordered score compares up
// to maxTools² pairs.)
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case string:
		b, ok := b.(string)
		return ok && a == b
	case number:
		b, ok := b.(number)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return false
}

// compareArgs is DeepEval's _compare_dicts: for two objects, each key of
// their union scores 1/|union| when both have it with equal values, or
// that share of the nested objects' own comparison when both values are
// objects; anything else scores 1 when equal, else 0. Two empty
// objects score 1 (DeepEval divides nothing and scores 0: a tool without
// arguments never matched itself).
func compareArgs(exp, got any) float64 {
	em, eok := exp.(map[string]any)
	gm, gok := got.(map[string]any)
	if !eok || !gok {
		return binaryScore(equalJSON(exp, got))
	}
	union := len(em)
	for k := range gm {
		if _, ok := em[k]; !ok {
			union++
		}
	}
	if union == 0 {
		return 1
	}
	score := 0.0
	// Keys in order: floating-point sums depend on the order of their
	// terms, and map order varies from run to run.
	for _, k := range slices.Sorted(maps.Keys(em)) {
		ev := em[k]
		gv, ok := gm[k]
		if !ok {
			continue
		}
		if equalJSON(ev, gv) {
			score += 1 / float64(union)
			continue
		}
		_, eIsObj := ev.(map[string]any)
		_, gIsObj := gv.(map[string]any)
		if eIsObj && gIsObj {
			score += compareArgs(ev, gv) / float64(union)
		}
	}
	return score
}

// pair is how well called tool c matches expected tool e: 0 for another
// name; else 1, times the arguments' share when they are compared, and 0
// when outputs are compared and differ.
func (s *toolSetup) pair(e, c *tool) float64 {
	if e.name != c.name {
		return 0
	}
	score := 1.0
	if s.args {
		score *= compareArgs(e.args, c.args)
	}
	if s.output && (e.hasOutput != c.hasOutput || !equalJSON(e.output, c.output)) {
		score = 0
	}
	return score
}

// exactly is the exact-match comparison of one pair: same name and, when
// compared, equal arguments and outputs.
func (s *toolSetup) exactly(e, c *tool) bool {
	if e.name != c.name {
		return false
	}
	if s.args && !equalJSON(e.args, c.args) {
		return false
	}
	return !s.output || e.hasOutput == c.hasOutput && equalJSON(e.output, c.output)
}

// scoreTools is the score, the reason and the details of one case.
func scoreTools(s *toolSetup, expected, called []tool) (float64, string, ToolDetails) {
	d := ToolDetails{Kind: KindToolCorrectness, EvaluationParams: s.params(), StrictMode: s.strict,
		Expected: names(expected), Called: names(called), Matches: []ToolMatch{}, Unmatched: []int{}}
	var score float64
	switch {
	case s.exact:
		d.Mode = ModeExact
		score = s.exactScore(expected, called, &d)
	case s.ordered:
		d.Mode = ModeOrdered
		score = s.orderedScore(expected, called, &d)
	default:
		d.Mode = ModeUnordered
		score = s.unorderedScore(expected, called, &d)
	}
	matched := make([]bool, len(expected))
	for _, m := range d.Matches {
		matched[m.Expected] = true
	}
	for i, ok := range matched {
		if !ok {
			d.Unmatched = append(d.Unmatched, i)
		}
	}
	for _, n := range d.Expected {
		if !slices.Contains(d.Called, n) && !slices.Contains(d.Missing, n) {
			d.Missing = append(d.Missing, n)
		}
	}
	if s.strict {
		raw := score
		score = binaryScore(raw >= 1)
		d.Formula += fmt.Sprintf("; strict_mode: 1 only if %s is 1 → %s", formatScore(raw), formatScore(score))
	}
	return score, toolReason(d, score), d
}

// unorderedScore is DeepEval's non-exact score: each expected tool, in
// order, takes the not yet matched call of the same name that matches it
// best (the first of equals); the score is the sum of those matches over
// the number of expected tools. Calls are told apart by position, so two
// identical calls can match two expected tools.
func (s *toolSetup) unorderedScore(expected, called []tool, d *ToolDetails) float64 {
	used := make([]bool, len(called))
	total := 0.0
	for i := range expected {
		best, at := 0.0, -1
		for j := range called {
			if used[j] {
				continue
			}
			if p := s.pair(&expected[i], &called[j]); p > best {
				best, at = p, j
			}
		}
		if at >= 0 {
			used[at] = true
			total += best
			d.Matches = append(d.Matches, ToolMatch{Expected: i, Called: at, Name: expected[i].name, Score: best})
		}
	}
	score := total / float64(len(expected))
	d.Formula = fmt.Sprintf("sum of best matches / expected = %s / %d = %s", formatScore(total), len(expected), formatScore(score))
	return score
}

// orderedScore is DeepEval's weighted longest common subsequence: cell
// (i, j) is the best total over the first i expected and j called tools,
// where a pair of the same name adds its match score (a pair scoring 0
// ends a chain, as DeepEval's table has it); the score is the total over
// the number of expected tools.
func (s *toolSetup) orderedScore(expected, called []tool, d *ToolDetails) float64 {
	m, n := len(expected), len(called)
	dp := make([][]float64, m+1)
	for i := range dp {
		dp[i] = make([]float64, n+1)
	}
	for i := 1; i <= m; i++ {
		for j := 1; j <= n; j++ {
			e, c := &expected[i-1], &called[j-1]
			best := max(dp[i-1][j], dp[i][j-1])
			if e.name == c.name {
				diag := 0.0
				if p := s.pair(e, c); p > 0 {
					diag = dp[i-1][j-1] + p
				}
				best = max(best, diag)
			}
			dp[i][j] = best
		}
	}
	// Walk back as DeepEval does, collecting the pairs on the path.
	for i, j := m, n; i > 0 && j > 0; {
		switch {
		case dp[i][j] == dp[i-1][j]:
			i--
		case dp[i][j] == dp[i][j-1]:
			j--
		default:
			d.Matches = append(d.Matches, ToolMatch{Expected: i - 1, Called: j - 1, Name: expected[i-1].name, Score: dp[i][j] - dp[i-1][j-1]})
			i, j = i-1, j-1
		}
	}
	slices.Reverse(d.Matches)
	total := dp[m][n]
	score := total / float64(m)
	d.Formula = fmt.Sprintf("weighted LCS / expected = %s / %d = %s", formatScore(total), m, formatScore(score))
	return score
}

// exactScore is 1 when the calls are the expected ones, one for one and
// in order, else 0.
func (s *toolSetup) exactScore(expected, called []tool, d *ToolDetails) float64 {
	for i := range min(len(expected), len(called)) {
		if !s.exactly(&expected[i], &called[i]) {
			break
		}
		d.Matches = append(d.Matches, ToolMatch{Expected: i, Called: i, Name: expected[i].name, Score: 1})
	}
	score := binaryScore(len(expected) == len(called) && len(d.Matches) == len(expected))
	d.Formula = fmt.Sprintf("exact match of %d expected and %d called tools → %s", len(expected), len(called), formatScore(score))
	return score
}

func names(ts []tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.name
	}
	return out
}

// toolReason says what the score rests on: DeepEval's wording, with its
// lists the right way round and every problem named.
func toolReason(d ToolDetails, score float64) string {
	lists := fmt.Sprintf("expected %q, called %q", d.Expected, d.Called)
	if len(d.Called) == 0 {
		lists = fmt.Sprintf("expected %q, no tool was called", d.Expected)
	}
	var b strings.Builder
	switch d.Mode {
	case ModeExact:
		if score == 1 {
			return "Exact match: " + lists + "."
		}
		b.WriteString("Not an exact match: ")
		switch {
		case len(d.Matches) < min(len(d.Expected), len(d.Called)):
			i := len(d.Matches)
			fmt.Fprintf(&b, "call %d differs (expected %q, called %q", i, d.Expected[i], d.Called[i])
			if d.Expected[i] == d.Called[i] {
				b.WriteString(" with other " + strings.Join(d.EvaluationParams[1:], " or "))
			}
			b.WriteString("); ")
		case len(d.Expected) != len(d.Called):
			fmt.Fprintf(&b, "%d tools expected, %d called; ", len(d.Expected), len(d.Called))
		}
		b.WriteString(lists + ".")
		return b.String()
	case ModeOrdered:
		if len(d.Unmatched) == 0 && allFull(d.Matches) {
			return fmt.Sprintf("Correct ordering: all expected tools %q were called in the expected order.", d.Expected)
		}
		b.WriteString("Incorrect tool usage: ")
	default:
		if len(d.Unmatched) == 0 && allFull(d.Matches) {
			return fmt.Sprintf("All expected tools %q were called (order not considered).", d.Expected)
		}
		b.WriteString("Incomplete tool usage: ")
	}
	var issues []string
	if len(d.Missing) > 0 {
		issues = append(issues, fmt.Sprintf("missing tools %q", d.Missing))
	}
	var other []string
	for _, i := range d.Unmatched {
		if !slices.Contains(d.Missing, d.Expected[i]) {
			other = append(other, fmt.Sprintf("%s (expected #%d)", d.Expected[i], i))
		}
	}
	if len(other) > 0 {
		what := "unmatched tools"
		if d.Mode == ModeOrdered {
			what = "out-of-order or mismatched tools"
		}
		issues = append(issues, what+" "+strings.Join(other, ", "))
	}
	var partial []string
	for _, m := range d.Matches {
		if m.Score < 1 {
			partial = append(partial, fmt.Sprintf("%s (expected #%d, called #%d) matches %s", m.Name, m.Expected, m.Called, formatScore(m.Score)))
		}
	}
	if len(partial) > 0 {
		issues = append(issues, "partial argument matches "+strings.Join(partial, ", "))
	}
	b.WriteString(strings.Join(issues, "; "))
	b.WriteString("; " + lists + ".")
	return b.String()
}

func allFull(ms []ToolMatch) bool {
	for _, m := range ms {
		if m.Score < 1 {
			return false
		}
	}
	return true
}

package engine

import (
	"bufio"
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
)

// Dataset streams test cases from a JSONL file or a JSON array, one at a
// time, so memory stays flat in the number of cases.
//
// A UTF-8 byte-order mark at the start of the file is skipped. A JSON array
// must be the whole file: anything but whitespace after its closing bracket,
// or a missing closing bracket, is an error rather than a shorter dataset.
type Dataset struct {
	path  string
	f     *os.File
	jsonl *bufio.Reader
	arr   *jsontext.Decoder
	lines *lineCounter // JSON: where arr's input has its newlines, for file:line
	line  int          // JSONL: line of the last case; JSON: index
	ids   caseIDs
	done  bool
	// src and rec decode one record, reused; setBy is parse's scratch.
	src   bytes.Reader
	rec   jsontext.Decoder
	setBy []string
}

// maxLine bounds one JSONL line; a case larger than this is almost surely a
// broken file, and bufio would otherwise buffer it whole.
const maxLine = 64 << 20

// OpenDataset opens path; a file whose first non-space byte is '[' is a JSON
// array, anything else JSONL.
func OpenDataset(path string) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open dataset: %w", err)
	}
	d := &Dataset{path: path, f: f, ids: newCaseIDs()}
	br := bufio.NewReaderSize(f, 1<<16)
	if bom, _ := br.Peek(len(utf8BOM)); bytes.Equal(bom, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM)) // some editors write one; it is not data
	}
	first, err := peekNonSpace(br)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, fmt.Errorf("read dataset %s: %w", path, err)
	}
	if first == '[' {
		d.lines = &lineCounter{r: br}
		// A record's own decoding (parse) decides what a record may hold;
		// the array's decoder only finds where each element ends.
		d.arr = jsontext.NewDecoder(d.lines, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
		if _, err := d.arr.ReadToken(); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: not a JSON array: %w", path, err)
		}
	} else {
		d.jsonl = br
	}
	return d, nil
}

var utf8BOM = []byte("\xef\xbb\xbf")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func peekNonSpace(br *bufio.Reader) (byte, error) {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			return 0, err
		}
		if c := b[n-1]; !isSpace(c) {
			return c, nil
		}
	}
}

// lineCounter notes where the newlines are in what is read through it,
// for the line of an offset of the JSON decoder reading ahead of it.
// Offsets are asked in increasing order, so a newline before the last
// offset asked is only counted.
type lineCounter struct {
	r        io.Reader
	read     int64   // bytes read through it
	before   int     // newlines before the last offset asked
	newlines []int64 // the offsets of the newlines after it
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.newlines = append(c.newlines, c.read+int64(i))
		}
	}
	c.read += int64(n)
	return n, err
}

// lineAt is the 1-based line of offset off.
func (c *lineCounter) lineAt(off int64) int {
	i := 0
	for i < len(c.newlines) && c.newlines[i] < off {
		i++
	}
	c.before += i
	c.newlines = append(c.newlines[:0], c.newlines[i:]...)
	return 1 + c.before
}

// arrayLine is the line of the JSON decoder's input offset.
func (d *Dataset) arrayLine() int { return d.lines.lineAt(d.arr.InputOffset()) }

// Close releases the file.
func (d *Dataset) Close() error { return d.f.Close() }

// Next returns the next case, or io.EOF. Errors name the file and line (JSONL)
// or the array index (JSON).
func (d *Dataset) Next(ctx context.Context) (*abi.TestCase, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if d.done {
		return nil, io.EOF
	}
	if d.arr != nil {
		return d.nextArray()
	}
	for {
		raw, err := d.jsonl.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			raw, err = d.readLong(raw)
		}
		if len(raw) == 0 && err == io.EOF {
			d.done = true
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s:%d: read: %w", d.path, d.line+1, err)
		}
		d.line++
		line := bytes.TrimSpace(raw)
		if len(line) == 0 || line[0] == '#' {
			if err == io.EOF {
				d.done = true
				return nil, io.EOF
			}
			continue
		}
		c, perr := d.parse(line, recordPlace{path: d.path, line: d.line, element: -1}, d.line)
		if perr != nil {
			return nil, perr
		}
		return c, nil
	}
}

func (d *Dataset) readLong(prefix []byte) ([]byte, error) {
	buf := append([]byte(nil), prefix...)
	for {
		more, err := d.jsonl.ReadSlice('\n')
		buf = append(buf, more...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

func (d *Dataset) nextArray() (*abi.TestCase, error) {
	next := d.arr.PeekKind()
	if next == ']' {
		d.done = true
		return nil, d.endArray()
	}
	raw, err := d.arr.ReadValue()
	if err != nil {
		at := d.arr.InputOffset()
		if syntax := (*jsontext.SyntacticError)(nil); errors.As(err, &syntax) {
			at = syntax.ByteOffset
		}
		ends := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if ends && at > 0 {
			at-- // the file's last byte, not the line after its last newline
		}
		line := d.lines.lineAt(at)
		if ends {
			if next == 0 { // no element starts: the file ends
				return nil, fmt.Errorf("%s:%d: JSON array not closed after %d elements: the file ends", d.path, line, d.line)
			}
			err = errors.New("the file ends inside it: JSON array not closed")
		}
		return nil, fmt.Errorf("%s:%d: element %d: %w", d.path, line, d.line, err)
	}
	idx := d.line
	d.line++
	start := d.lines.lineAt(d.arr.InputOffset() - int64(len(raw)))
	return d.parse(raw, recordPlace{path: d.path, line: start, element: idx}, idx)
}

// recordPlace names a record in errors ("cases.jsonl:12", "cases.json:3:
// element 2"). It is formatted only when an error needs it: a fmt.Sprintf
// per record was a tenth of reading the dataset.
type recordPlace struct {
	path    string
	line    int
	element int // -1 in a JSONL file
}

func (p recordPlace) String() string {
	if p.element < 0 {
		return fmt.Sprintf("%s:%d", p.path, p.line)
	}
	return fmt.Sprintf("%s:%d: element %d", p.path, p.line, p.element)
}

// endArray consumes the closing bracket and checks that only whitespace
// follows: a truncated file or two concatenated arrays must not pass for a
// shorter dataset.
func (d *Dataset) endArray() error {
	if _, err := d.arr.ReadToken(); err != nil {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("want ',' or ']'")
		}
		return fmt.Errorf("%s:%d: JSON array not closed after %d elements: %w", d.path, d.arrayLine(), d.line, err)
	}
	// The decoder reads a stream of values: the next one, or the syntax
	// error where one should start, is what follows the array.
	val, err := d.arr.ReadValue()
	var syntax *jsontext.SyntacticError
	var at int64
	switch {
	case err == io.EOF:
		return io.EOF
	case err == nil:
		at = d.arr.InputOffset() - int64(len(val))
	case errors.As(err, &syntax):
		at = syntax.ByteOffset
	default:
		return fmt.Errorf("%s:%d: read: %w", d.path, d.arrayLine(), err)
	}
	return fmt.Errorf("%s:%d: data after the JSON array's closing ']' (a dataset is one array, or JSONL)", d.path, d.lines.lineAt(at))
}

// Field aliases accepted in datasets, as other tools name them.
var aliases = map[string]string{
	"question":   abi.FieldInput,
	"query":      abi.FieldInput,
	"generation": abi.FieldActualOutput,
	"output":     abi.FieldActualOutput,
	"response":   abi.FieldActualOutput,
	"reference":  abi.FieldExpectedOutput,
	"expected":   abi.FieldExpectedOutput,
	"contexts":   abi.FieldRetrievalContext,
}

// parse decodes one record, its members in file order; a record without
// an id is case-<ordinal>. The decoder refuses what a dataset must not
// hold silently: a name given twice, invalid UTF-8, anything after the
// object.
func (d *Dataset) parse(raw []byte, where recordPlace, ordinal int) (*abi.TestCase, error) {
	c := &abi.TestCase{}
	d.src.Reset(raw)
	d.rec.Reset(&d.src)
	notObject := func(err error) error {
		return fmt.Errorf("%s: not a JSON object: %w", where, err)
	}
	if tok, err := d.rec.ReadToken(); err != nil {
		return nil, notObject(err)
	} else if tok.Kind() != '{' {
		return nil, notObject(fmt.Errorf("a record is %s", kindOf(tok.Kind())))
	}
	setBy := d.setBy[:0] // field, then the name that set it
	for d.rec.PeekKind() == '"' {
		name, err := d.rec.ReadToken()
		if err != nil {
			return nil, notObject(err)
		}
		key := name.String()
		field := key
		if a, ok := aliases[key]; ok {
			field = a
		}
		for i := 0; i < len(setBy); i += 2 {
			if setBy[i] == field {
				return nil, fmt.Errorf("%s: %s", where, bothSet(field, setBy[i+1], key))
			}
		}
		setBy = append(setBy, field, key)
		if err := setField(&d.rec, c, field); err != nil {
			return nil, fmt.Errorf("%s: field %q: %w", where, key, err)
		}
	}
	d.setBy = setBy[:0]
	if _, err := d.rec.ReadToken(); err != nil { // the closing brace, or why not
		return nil, notObject(err)
	}
	if _, err := d.rec.ReadToken(); err != io.EOF {
		return nil, notObject(errors.New("data after the record's closing '}'"))
	}
	if err := checkShape(c); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if c.ID == "" {
		c.ID = "case-" + strconv.Itoa(ordinal)
	}
	if d.line > math.MaxUint32 {
		return nil, fmt.Errorf("%s: more than %d records in one dataset", where, uint32(math.MaxUint32))
	}
	if prev, repeated := d.ids.add(d.path, c.ID, d.line); repeated {
		return nil, fmt.Errorf("%s: duplicate case id %q (first seen at record %d)", where, c.ID, prev)
	}
	return c, nil
}

// bothSet says which two names of one field a record gave.
func bothSet(field, first, second string) string {
	switch field {
	case first:
		return fmt.Sprintf("both %q and its alias %q are set", first, second)
	case second:
		return fmt.Sprintf("both %q and its alias %q are set", second, first)
	}
	return fmt.Sprintf("both %q and %q are set, aliases of %q", first, second, field)
}

// setField reads the value of the member just named into c.
func setField(dec *jsontext.Decoder, c *abi.TestCase, field string) error {
	want := func(what string) error {
		k := dec.PeekKind()
		if _, err := dec.ReadValue(); err != nil {
			return err
		}
		return fmt.Errorf("want %s, got %s", what, kindOf(k))
	}
	str := func(dst *string) error {
		switch dec.PeekKind() {
		case 'n':
			_, err := dec.ReadToken()
			return err
		case '"':
			tok, err := dec.ReadToken()
			*dst = tok.String()
			return err
		}
		return want("a string")
	}
	list := func(dst *[]string) error {
		switch dec.PeekKind() {
		case 'n':
			_, err := dec.ReadToken()
			return err
		case '"': // a single string is a one-item list
			tok, err := dec.ReadToken()
			*dst = []string{tok.String()}
			return err
		case '[':
			val, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if json.Unmarshal(val, dst) != nil {
				return errors.New("want a list of strings, got a list holding something else")
			}
			return nil
		}
		return want("a list of strings")
	}
	tools := func(dst *[]abi.ToolCall) error {
		switch dec.PeekKind() {
		case 'n':
			_, err := dec.ReadToken()
			return err
		case '[':
			val, err := dec.ReadValue()
			if err != nil {
				return err
			}
			// DeepEval's ToolCall names the arguments input_parameters
			// (inputParameters when exported): read as arguments, not
			// dropped as an unknown member — tool_correctness would then
			// compare no arguments and find them equal.
			var items []struct {
				Name                 string         `json:"name"`
				Arguments            jsontext.Value `json:"arguments"`
				InputParameters      jsontext.Value `json:"input_parameters"`
				InputParametersCamel jsontext.Value `json:"inputParameters"`
				Output               jsontext.Value `json:"output"`
			}
			if err := json.Unmarshal(val, &items); err != nil {
				return fmt.Errorf("want a list of {name, arguments, output}: %w", err)
			}
			*dst = make([]abi.ToolCall, len(items))
			for i, t := range items {
				if t.Name == "" {
					return fmt.Errorf("item %d has no name", i)
				}
				given := func(v jsontext.Value) bool { return len(v) > 0 && string(v) != "null" }
				args := t.Arguments
				for _, alias := range []jsontext.Value{t.InputParameters, t.InputParametersCamel} {
					if !given(alias) {
						continue
					}
					if given(args) {
						return fmt.Errorf("item %d gives its arguments twice (arguments, input_parameters, inputParameters)", i)
					}
					args = alias
				}
				(*dst)[i] = abi.ToolCall{Name: t.Name, Arguments: stdjson.RawMessage(args), Output: stdjson.RawMessage(t.Output)}
			}
			return nil
		}
		return want("a list of {name, arguments, output}")
	}
	switch field {
	case "id":
		if dec.PeekKind() == '0' { // a number names a case by its literal
			val, err := dec.ReadValue()
			c.ID = string(val)
			return err
		}
		return str(&c.ID)
	case abi.FieldInput:
		return str(&c.Input)
	case abi.FieldActualOutput:
		return str(&c.ActualOutput)
	case abi.FieldExpectedOutput:
		return str(&c.ExpectedOutput)
	case abi.FieldContext:
		return list(&c.Context)
	case abi.FieldRetrievalContext:
		return list(&c.RetrievalContext)
	case abi.FieldToolsCalled:
		return tools(&c.ToolsCalled)
	case abi.FieldExpectedTools:
		return tools(&c.ExpectedTools)
	case abi.FieldTurns:
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return decodeTurns(val, &c.Turns)
	case abi.FieldScenario:
		return str(&c.Scenario)
	case abi.FieldExpectedOutcome:
		return str(&c.ExpectedOutcome)
	case abi.FieldChatbotRole:
		return str(&c.ChatbotRole)
	case abi.FieldLastUserTurn, abi.FieldLastAssistantTurn:
		return fmt.Errorf("%s is derived from turns (the content of the last such turn); a dataset cannot set it", field)
	}
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if c.Extra == nil {
		c.Extra = map[string]stdjson.RawMessage{}
	}
	c.Extra[field] = bytes.Clone(val)
	return nil
}

func kindOf(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '[':
		return "a list"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '0':
		return "a number"
	}
	return "nothing"
}

// singleTurnOnly are the fields a conversational case leaves to its turns.
var singleTurnOnly = []string{
	abi.FieldInput, abi.FieldActualOutput, abi.FieldExpectedOutput,
	abi.FieldRetrievalContext, abi.FieldToolsCalled, abi.FieldExpectedTools,
}

// checkShape holds a case to one shape: single-turn, or conversational
// (turns) with its input, outputs, retrieval and tools inside the turns.
// A case giving both is refused rather than read one way: which of input
// and the first user turn a metric should score is not ours to guess.
func checkShape(c *abi.TestCase) error {
	if !c.Conversational() {
		for _, f := range []string{abi.FieldScenario, abi.FieldExpectedOutcome, abi.FieldChatbotRole} {
			if c.Has(f) {
				return fmt.Errorf("field %q: only a conversational case (one with turns) has a %s", f, f)
			}
		}
		return nil
	}
	for _, f := range singleTurnOnly {
		if c.Has(f) {
			return fmt.Errorf("field %q: a case with turns is conversational and cannot also have %s (put it in a turn, or make two cases)", f, f)
		}
	}
	return nil
}

// datasetTurn is a turn as a dataset spells it; the pointers tell an
// absent member from an empty one.
type datasetTurn struct {
	Role             *string        `json:"role"`
	Content          *string        `json:"content"`
	ToolsCalled      []abi.ToolCall `json:"tools_called"`
	RetrievalContext []string       `json:"retrieval_context"`
}

// turnRoles are the roles a turn may have, in the order errors list them.
var turnRoles = []string{abi.RoleUser, abi.RoleAssistant, abi.RoleSystem, abi.RoleTool}

// decodeTurns reads a dataset's turns strictly: a list of at least one
// object, each with a known role and a content string (empty only beside
// tools_called), no member it does not know.
func decodeTurns(val jsontext.Value, out *[]abi.Turn) error {
	if val.Kind() == 'n' {
		return nil
	}
	var items []jsontext.Value
	if val.Kind() != '[' || json.Unmarshal(val, &items) != nil {
		return fmt.Errorf("want a list of turns {role, content, tools_called, retrieval_context}, got %s", kindOf(val.Kind()))
	}
	if len(items) == 0 {
		return errors.New("empty: a conversational case needs at least one turn (or leave turns out)")
	}
	turns := make([]abi.Turn, 0, len(items))
	for i, item := range items {
		var t datasetTurn
		if err := json.Unmarshal(item, &t, json.RejectUnknownMembers(true)); err != nil {
			return fmt.Errorf("turn %d: %s", i, turnError(item, err))
		}
		if t.Role == nil {
			return fmt.Errorf("turn %d: no role (one of %s)", i, strings.Join(turnRoles, ", "))
		}
		if !slices.Contains(turnRoles, *t.Role) {
			return fmt.Errorf("turn %d: role %q is not one of %s", i, *t.Role, strings.Join(turnRoles, ", "))
		}
		if t.Content == nil {
			return fmt.Errorf("turn %d: no content", i)
		}
		if *t.Content == "" && len(t.ToolsCalled) == 0 {
			return fmt.Errorf("turn %d: empty content (allowed only in a turn with tools_called)", i)
		}
		for j, tc := range t.ToolsCalled {
			if tc.Name == "" {
				return fmt.Errorf("turn %d: tools_called: item %d has no name", i, j)
			}
		}
		turns = append(turns, abi.Turn{Role: *t.Role, Content: *t.Content, ToolsCalled: t.ToolsCalled, RetrievalContext: t.RetrievalContext})
	}
	*out = turns
	return nil
}

// turnError says what is wrong with one turn in a dataset author's words
// rather than a decoder's Go types.
func turnError(item jsontext.Value, err error) string {
	if item.Kind() != '{' {
		return fmt.Sprintf("want an object {role, content, ...}, got %s", kindOf(item.Kind()))
	}
	var se *json.SemanticError
	if errors.As(err, &se) && se.JSONPointer != "" {
		if errors.Is(err, json.ErrUnknownName) {
			return fmt.Sprintf("unknown field %q (a turn has role, content, tools_called, retrieval_context)", se.JSONPointer.LastToken())
		}
		return fmt.Sprintf("field %q: %s", strings.TrimPrefix(string(se.JSONPointer), "/"), wantOf(string(se.JSONPointer)))
	}
	return err.Error()
}

func wantOf(pointer string) string {
	switch {
	case pointer == "/role" || pointer == "/content":
		return "want a string"
	case strings.HasPrefix(pointer, "/retrieval_context"):
		return "want a list of strings"
	case strings.HasPrefix(pointer, "/tools_called"):
		return "want a list of {name, arguments, output}"
	}
	return "wrong type"
}

package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

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
	arr   *json.Decoder
	rest  *bufio.Reader // JSON: the reader under arr, to check the tail
	lines *lineCounter  // JSON: newlines arr has read, for file:line
	line  int           // JSONL: line of the last case; JSON: index
	ids   caseIDs
	done  bool
	// members is parse's scratch space for a record's fields.
	members []objectMember
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
		d.rest, d.lines = br, &lineCounter{r: br}
		d.arr = json.NewDecoder(d.lines)
		if _, err := d.arr.Token(); err != nil {
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

// lineCounter counts the newlines read through it. The JSON decoder reads
// ahead, so the line at its offset is this count less the newlines still
// in its buffer (Dataset.arrayLine).
type lineCounter struct {
	r     io.Reader
	lines int
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.lines += bytes.Count(p[:n], []byte{'\n'})
	return n, err
}

// arrayLine is the 1-based line of the JSON decoder's input offset.
func (d *Dataset) arrayLine() int {
	var ahead newlines
	_, _ = io.Copy(&ahead, d.arr.Buffered()) // a bytes.Reader: writes its slice, no copy
	return 1 + d.lines.lines - int(ahead)
}

// newlines is a writer counting the newlines written to it.
type newlines int

func (n *newlines) Write(p []byte) (int, error) {
	*n += newlines(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

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
	if !d.arr.More() {
		d.done = true
		return nil, d.endArray()
	}
	var raw json.RawMessage
	if err := d.arr.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("the file ends inside it: JSON array not closed")
		}
		return nil, fmt.Errorf("%s:%d: element %d: %w", d.path, d.arrayLine(), d.line, err)
	}
	idx := d.line
	d.line++
	start := d.arrayLine() - bytes.Count(raw, []byte{'\n'})
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
// shorter dataset. It reads the tail in bounded chunks, never whole.
func (d *Dataset) endArray() error {
	if tok, err := d.arr.Token(); err != nil || tok != json.Delim(']') {
		if err == nil || err == io.EOF {
			err = errors.New("want ',' or ']'")
		}
		return fmt.Errorf("%s:%d: JSON array not closed after %d elements: %w", d.path, d.arrayLine(), d.line, err)
	}
	line := d.arrayLine()
	tail := bufio.NewReader(io.MultiReader(d.arr.Buffered(), d.rest))
	for {
		c, err := tail.ReadByte()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return fmt.Errorf("%s:%d: read: %w", d.path, line, err)
		}
		switch {
		case c == '\n':
			line++
		case !isSpace(c):
			return fmt.Errorf("%s:%d: data after the JSON array's closing ']' (a dataset is one array, or JSONL)", d.path, line)
		}
	}
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

// parse decodes one record; a record without an id is case-<ordinal>.
func (d *Dataset) parse(raw []byte, where recordPlace, ordinal int) (*abi.TestCase, error) {
	c := &abi.TestCase{}
	// The members in file order when the record is plain enough to split
	// without encoding/json (most are); else through its map, whose order
	// is random — an error on one of two bad fields may name either.
	members, fast := splitObjectFast(raw, d.members[:0])
	d.members = members[:0]
	if fast {
		for _, m := range members {
			field := m.key
			if a, ok := aliases[m.key]; ok {
				for _, o := range members {
					if o.key == a {
						return nil, fmt.Errorf("%s: both %q and its alias %q are set", where, a, m.key)
					}
				}
				field = a
			}
			if err := setField(c, field, m.val); err != nil {
				return nil, fmt.Errorf("%s: field %q: %w", where, m.key, err)
			}
		}
	} else {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object: %w", where, err)
		}
		for key, val := range obj {
			field := key
			if a, ok := aliases[key]; ok {
				if _, both := obj[a]; both {
					return nil, fmt.Errorf("%s: both %q and its alias %q are set", where, a, key)
				}
				field = a
			}
			if err := setField(c, field, val); err != nil {
				return nil, fmt.Errorf("%s: field %q: %w", where, key, err)
			}
		}
	}
	clear(d.members[:cap(d.members)])
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

func setField(c *abi.TestCase, field string, val json.RawMessage) error {
	str := func(dst *string) error {
		if string(val) == "null" {
			return nil
		}
		if v, ok := plainString(val); ok {
			*dst = v
			return nil
		}
		if err := json.Unmarshal(val, dst); err != nil {
			return fmt.Errorf("want a string, got %s", kindOf(val))
		}
		return nil
	}
	list := func(dst *[]string) error {
		if string(val) == "null" {
			return nil
		}
		var s string
		if json.Unmarshal(val, &s) == nil { // a single string is a one-item list
			*dst = []string{s}
			return nil
		}
		if err := json.Unmarshal(val, dst); err != nil {
			return fmt.Errorf("want a list of strings, got %s", kindOf(val))
		}
		return nil
	}
	tools := func(dst *[]abi.ToolCall) error {
		if string(val) == "null" {
			return nil
		}
		if err := json.Unmarshal(val, dst); err != nil {
			return fmt.Errorf("want a list of {name, arguments, output}: %v", err)
		}
		for i, t := range *dst {
			if t.Name == "" {
				return fmt.Errorf("item %d has no name", i)
			}
		}
		return nil
	}
	switch field {
	case "id":
		if v, ok := plainString(val); ok {
			// What both paths below make of a string.
			c.ID = v
			return nil
		}
		var n json.Number
		if json.Unmarshal(val, &n) == nil {
			c.ID = n.String()
			return nil
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
	}
	if c.Extra == nil {
		c.Extra = map[string]json.RawMessage{}
	}
	c.Extra[field] = append(json.RawMessage(nil), val...)
	return nil
}

// plainString returns the text of a JSON string value that holds no
// escape, no control character and only valid UTF-8 — what encoding/json
// would decode it to, byte for byte — without running the decoder: the
// dataset's long input and output strings are most of reading it.
// Anything else reports false, for encoding/json to decide.
func plainString(v json.RawMessage) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	// Whole-slice scans (IndexByte is vector code), not a byte loop.
	if bytes.IndexByte(in, '"') >= 0 || bytes.IndexByte(in, '\\') >= 0 || hasControl(in) || !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

func kindOf(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	switch {
	case s == "":
		return "nothing"
	case s[0] == '"':
		return "a string"
	case s[0] == '[':
		return "a list"
	case s[0] == '{':
		return "an object"
	case s == "true" || s == "false":
		return "a boolean"
	case s == "null":
		return "null"
	}
	return "a number"
}

package guest

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
)

// decodeMeasureRequest decodes a measure request as json.Unmarshal does
// into a zero abi.MeasureRequest, through a fast path for the requests a
// host writes.
//
// Why: a guest runs under wazero with close-on-context-done, which leaves
// the compiled code for the host's Go at every loop iteration (≈ 50 ns);
// encoding/json steps through a request byte by byte, several calls and
// loop turns per byte, and decoding a 1 KiB request took ≈ 0.75 ms of the
// ≈ 1.2 ms a trivial metric call cost. The fast path finds the end of a
// string 8 bytes per loop turn and copies it in one go.
//
// It is exact by construction: it takes only what it fully understands
// (the keys of the ABI types spelled as the host spells them, strings,
// numbers, arrays and objects, no null) and checks the JSON syntax of all
// of it; anything else — another key, a different letter case, null,
// nesting past maxFastDepth, a syntax error — is decided by json.Unmarshal,
// errors included. FuzzDecodeMeasureRequest holds it to: the fast path's
// answer, when it gives one, equals json.Unmarshal's.
func decodeMeasureRequest(data []byte, r *abi.MeasureRequest) error {
	d := fastDecoder{b: data}
	var fast abi.MeasureRequest
	if d.measureRequest(&fast) {
		*r = fast
		return nil
	}
	*r = abi.MeasureRequest{}
	return json.Unmarshal(data, r)
}

// maxFastDepth bounds the nesting of a raw value (config, prepared,
// tool arguments, extra) the fast path checks itself.
const maxFastDepth = 64

// fastDecoder reads JSON from b; each method returns false when it is not
// sure, and the caller gives up (the decoder is not reused).
type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) measureRequest(r *abi.MeasureRequest) bool {
	d.space()
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return d.str(&r.Kind)
		case "metric":
			return d.str(&r.Metric)
		case "config":
			return d.raw(&r.Config)
		case "prepared":
			return d.raw(&r.Prepared)
		case "threshold":
			return d.float(&r.Threshold)
		case "judge_model":
			return d.str(&r.JudgeModel)
		case "case":
			return d.testCase(&r.Case)
		}
		return false
	})
	if !ok {
		return false
	}
	d.space()
	return d.i == len(d.b)
}

func (d *fastDecoder) testCase(c *abi.TestCase) bool {
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return d.str(&c.ID)
		case "input":
			return d.str(&c.Input)
		case "actual_output":
			return d.str(&c.ActualOutput)
		case "expected_output":
			return d.str(&c.ExpectedOutput)
		case "context":
			return d.strings(&c.Context)
		case "retrieval_context":
			return d.strings(&c.RetrievalContext)
		case "tools_called":
			return d.tools(&c.ToolsCalled)
		case "expected_tools":
			return d.tools(&c.ExpectedTools)
		case "extra":
			return d.extra(&c.Extra)
		}
		return false
	})
}

func (d *fastDecoder) tools(out *[]abi.ToolCall) bool {
	list := []abi.ToolCall{}
	ok := d.array(func() bool {
		var t abi.ToolCall
		ok := d.object(func(key []byte) bool {
			switch string(key) {
			case "name":
				return d.str(&t.Name)
			case "arguments":
				return d.raw(&t.Arguments)
			case "output":
				return d.raw(&t.Output)
			}
			return false
		})
		list = append(list, t)
		return ok
	})
	*out = list
	return ok
}

func (d *fastDecoder) strings(out *[]string) bool {
	list := []string{}
	ok := d.array(func() bool {
		var s string
		ok := d.str(&s)
		list = append(list, s)
		return ok
	})
	*out = list
	return ok
}

func (d *fastDecoder) extra(out *map[string]json.RawMessage) bool {
	m := map[string]json.RawMessage{}
	*out = m
	if !d.peek('{') {
		return false
	}
	d.i++
	d.space()
	if d.peek('}') {
		d.i++
		return true
	}
	for {
		var key string
		if !d.str(&key) {
			return false
		}
		d.space()
		if !d.peek(':') {
			return false
		}
		d.i++
		d.space()
		var v json.RawMessage
		if !d.raw(&v) {
			return false
		}
		m[key] = v
		if !d.next('}') {
			return false
		}
		if d.b[d.i-1] == '}' {
			return true
		}
	}
}

// stringSpecial is non-zero when a byte of x is ≥ 0x80, < 0x20, '"' or
// '\\' (exact for ASCII bytes; a high byte is caught by its own bit).
func stringSpecial(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	return x&highs |
		(x-ones*0x20)&^x&highs |
		(quote-ones)&^quote&highs |
		(backslash-ones)&^backslash&highs
}

// object reads an object whose keys are plain (no escapes), calling field
// with d at each value; field returns false for a key it does not know.
func (d *fastDecoder) object(field func(key []byte) bool) bool {
	if !d.peek('{') {
		return false
	}
	d.i++
	d.space()
	if d.peek('}') {
		d.i++
		return true
	}
	for {
		key, ok := d.plainKey()
		if !ok {
			return false
		}
		d.space()
		if !d.peek(':') {
			return false
		}
		d.i++
		d.space()
		if !field(key) {
			return false
		}
		if !d.next('}') {
			return false
		}
		if d.b[d.i-1] == '}' {
			return true
		}
	}
}

// array reads an array, calling elem with d at each element.
func (d *fastDecoder) array(elem func() bool) bool {
	if !d.peek('[') {
		return false
	}
	d.i++
	d.space()
	if d.peek(']') {
		d.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !d.next(']') {
			return false
		}
		if d.b[d.i-1] == ']' {
			return true
		}
	}
}

// next consumes the space and the ',' or closing byte after a member, and
// the space after a ','.
func (d *fastDecoder) next(closing byte) bool {
	d.space()
	if d.i >= len(d.b) {
		return false
	}
	switch d.b[d.i] {
	case ',':
		d.i++
		d.space()
		return true
	case closing:
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) peek(c byte) bool { return d.i < len(d.b) && d.b[d.i] == c }

func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// plainKey reads a key of printable ASCII without escapes.
func (d *fastDecoder) plainKey() ([]byte, bool) {
	if !d.peek('"') {
		return nil, false
	}
	start := d.i + 1
	end, clean := scanString(d.b, start)
	if end < 0 || !clean {
		return nil, false
	}
	d.i = end + 1
	return d.b[start:end], true
}

// str reads a string value into out.
func (d *fastDecoder) str(out *string) bool {
	if !d.peek('"') {
		return false
	}
	start := d.i + 1
	end, clean := scanString(d.b, start)
	if end < 0 {
		return false
	}
	if clean {
		*out = string(d.b[start:end])
	} else {
		s, ok := unquote(d.b[start:end])
		if !ok {
			return false
		}
		*out = s
	}
	d.i = end + 1
	return true
}

// float reads a number as encoding/json does into a float64.
func (d *fastDecoder) float(out *float64) bool {
	start := d.i
	if !d.number() {
		return false
	}
	if d.i == start+1 {
		*out = float64(d.b[start] - '0') // one digit: exact, without strconv
		return true
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil {
		return false
	}
	*out = f
	return true
}

// raw reads any value (not null) and keeps its bytes, as json.RawMessage.
func (d *fastDecoder) raw(out *json.RawMessage) bool {
	start := d.i
	if d.peek('n') || !d.skip(0) {
		return false
	}
	*out = append(json.RawMessage(nil), d.b[start:d.i]...)
	return true
}

// skip checks and passes one value.
func (d *fastDecoder) skip(depth int) bool {
	if d.i >= len(d.b) || depth > maxFastDepth {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		d.space()
		if d.peek('}') {
			d.i++
			return true
		}
		for {
			var key string
			if !d.str(&key) {
				return false
			}
			d.space()
			if !d.peek(':') {
				return false
			}
			d.i++
			d.space()
			if !d.skip(depth + 1) {
				return false
			}
			if !d.next('}') {
				return false
			}
			if d.b[d.i-1] == '}' {
				return true
			}
		}
	case c == '[':
		return d.array(func() bool { return d.skip(depth + 1) })
	case c == '"':
		var s string
		return d.str(&s)
	case c == '-' || ('0' <= c && c <= '9'):
		return d.number()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return false
}

func (d *fastDecoder) literal(word string) bool {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// number passes a number of JSON's grammar.
func (d *fastDecoder) number() bool {
	if d.peek('-') {
		d.i++
	}
	switch {
	case d.peek('0'):
		d.i++
	case d.i < len(d.b) && '1' <= d.b[d.i] && d.b[d.i] <= '9':
		d.digits()
	default:
		return false
	}
	if d.peek('.') {
		d.i++
		if !d.digits() {
			return false
		}
	}
	if d.peek('e') || d.peek('E') {
		d.i++
		if d.peek('+') || d.peek('-') {
			d.i++
		}
		if !d.digits() {
			return false
		}
	}
	return true
}

func (d *fastDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// scanString finds the closing quote of a string whose contents start at
// b[start], 32 or 8 bytes per loop turn while they are plain. end is the
// quote's index (-1: none, or a control byte, which JSON forbids); clean
// says the contents are ASCII without escapes, so they are the string.
func scanString(b []byte, start int) (end int, clean bool) {
	clean = true
	i := start
	for {
		// 32 bytes a turn while nothing is special: in a guest every loop
		// turn (every taken jump, in Go's wasm code) passes the host's
		// termination check, which costs more than the arithmetic.
		for ; i+32 <= len(b); i += 32 {
			if stringSpecial(binary.LittleEndian.Uint64(b[i:]))|stringSpecial(binary.LittleEndian.Uint64(b[i+8:]))|
				stringSpecial(binary.LittleEndian.Uint64(b[i+16:]))|stringSpecial(binary.LittleEndian.Uint64(b[i+24:])) != 0 {
				break
			}
		}
		for ; i+8 <= len(b); i += 8 {
			if stringSpecial(binary.LittleEndian.Uint64(b[i:])) != 0 {
				break
			}
		}
		if i >= len(b) {
			return -1, false
		}
		switch c := b[i]; {
		case c == '"':
			return i, clean
		case c < 0x20:
			return -1, false
		case c == '\\':
			clean = false
			i += 2 // and the escaped byte, which unquote checks
		case c >= utf8.RuneSelf:
			clean = false
			i++
		default:
			i++
		}
	}
}

// unquote resolves the escapes and invalid UTF-8 of a string's contents
// exactly as encoding/json does (its unquoteBytes): an invalid surrogate
// or byte becomes U+FFFD; an unknown escape is an error.
func unquote(s []byte) (string, bool) {
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			r++
			if r >= len(s) {
				return "", false
			}
			switch s[r] {
			case '"', '\\', '/':
				b = append(b, s[r])
				r++
			case 'b':
				b = append(b, '\b')
				r++
			case 'f':
				b = append(b, '\f')
				r++
			case 'n':
				b = append(b, '\n')
				r++
			case 'r':
				b = append(b, '\r')
				r++
			case 't':
				b = append(b, '\t')
				r++
			case 'u':
				r--
				rr := getu4(s[r:])
				if rr < 0 {
					return "", false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						break
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default:
				return "", false
			}
		case c == '"' || c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return string(b), true
}

// getu4 decodes \uXXXX at the start of s; -1 if it is not one.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

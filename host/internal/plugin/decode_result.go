package plugin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
)

// decodeMeasureResult is json.Unmarshal(raw, r) without reflection, for
// the results guests write: on a trivial metric's Wasm path that call was
// ≈ 4% of the host's CPU. It answers true only when it is sure, and *r is
// then exactly what json.Unmarshal makes of raw (the same floats bit for
// bit, Details a copy of the value's bytes, a new Error); false means
// "not sure" and leaves r untouched, and the caller runs json.Unmarshal,
// which decides, errors included. FuzzMeasureResultDecode holds it to
// that on any input.
//
// It is sure of: r pointing at the zero value (json.Unmarshal merges into
// what is there), an object with only MeasureResult's and Error's keys
// spelled as their tags, each once, values of their fields' types or
// null. Anything else — another key, a case variant encoding/json would
// match, a type encoding/json would refuse, nesting past maxQuickDepth —
// is encoding/json's. It checks the syntax of everything it reads, so its
// answer does not rest on the caller having checked raw first.
func decodeMeasureResult(raw []byte, r *abi.MeasureResult) bool {
	if r == nil || !zeroMeasureResult(r) {
		return false
	}
	d := resultDecoder{b: raw}
	var res abi.MeasureResult
	d.space()
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "score":
			return d.floatPtr(&res.Score)
		case "success":
			return d.boolean(&res.Success)
		case "threshold":
			return d.float(&res.Threshold)
		case "reason":
			return d.str(&res.Reason)
		case "score_mode":
			return d.str(&res.ScoreMode)
		case "details":
			return d.raw(&res.Details)
		case "error":
			return d.errorValue(&res.Error)
		}
		return false
	})
	if !ok {
		return false
	}
	d.space()
	if d.i != len(d.b) {
		return false
	}
	*r = res
	return true
}

// zeroMeasureResult: r holds nothing json.Unmarshal could merge into or
// leave in place, down to a -0 threshold and an empty non-nil Details.
func zeroMeasureResult(r *abi.MeasureResult) bool {
	return r.Score == nil && !r.Success && math.Float64bits(r.Threshold) == 0 && r.Reason == "" &&
		r.ScoreMode == "" && r.Details == nil && r.Error == nil
}

// resultDecoder reads JSON from b; each method returns false when it is
// not sure, and the caller gives up (the decoder is not reused).
type resultDecoder struct {
	b []byte
	i int
}

// maxResultKeys bounds the members of one object: MeasureResult and
// Error have seven fields each, so more members hold a repeat or a key
// the decoder does not know.
const maxResultKeys = 8

// object reads an object, calling field with d at each member's value;
// field returns false for a key it does not know. A key that repeats is
// left to encoding/json (which keeps the last; decodeStrict refuses it
// before): the fields' decoders assume they start from zero.
func (d *resultDecoder) object(field func(key []byte) bool) bool {
	if !d.peek('{') {
		return false
	}
	d.i++
	d.space()
	if d.peek('}') {
		d.i++
		return true
	}
	var keys [maxResultKeys][]byte
	for n := 0; ; n++ {
		key, ok := d.key()
		if !ok || n == len(keys) {
			return false
		}
		for _, k := range keys[:n] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		keys[n] = key
		d.space()
		if !d.peek(':') {
			return false
		}
		d.i++
		d.space()
		if !field(key) {
			return false
		}
		d.space()
		if d.i >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// key reads a key up to the next quote. Only the tag names are taken,
// and they hold no backslash or control byte, so a key that matches one
// is a complete JSON string spelled without escapes; one that does not
// (an escaped quote included) is refused by the caller's switch.
func (d *resultDecoder) key() ([]byte, bool) {
	if !d.peek('"') {
		return nil, false
	}
	n := bytes.IndexByte(d.b[d.i+1:], '"')
	if n < 0 {
		return nil, false
	}
	key := d.b[d.i+1 : d.i+1+n]
	d.i += n + 2
	return key, true
}

func (d *resultDecoder) errorValue(out **abi.Error) bool {
	if d.null() {
		return true // *out stays nil
	}
	e := new(abi.Error)
	if !d.object(func(key []byte) bool {
		switch string(key) {
		case "code":
			return d.str((*string)(&e.Code))
		case "message":
			return d.str(&e.Message)
		case "plugin":
			return d.str(&e.Plugin)
		case "digest":
			return d.str(&e.Digest)
		case "field":
			return d.str(&e.Field)
		case "stderr":
			return d.str(&e.Stderr)
		case "retryable":
			return d.boolean(&e.Retryable)
		}
		return false
	}) {
		return false
	}
	*out = e
	return true
}

// null consumes a null. Into a pointer encoding/json stores nil, into a
// bool, number or string it stores nothing: from the zero value both
// leave the field as it is.
func (d *resultDecoder) null() bool { return d.literal("null") }

func (d *resultDecoder) boolean(out *bool) bool {
	switch {
	case d.literal("true"):
		*out = true
		return true
	case d.literal("false"), d.null():
		return true
	}
	return false
}

// float reads a number as encoding/json does into a float64: ParseFloat
// of the literal, which JSON's grammar has been checked for first (so
// ParseFloat's wider syntax, hex and underscores, never applies).
func (d *resultDecoder) float(out *float64) bool {
	if d.null() {
		return true
	}
	start := d.i
	if !d.number() {
		return false
	}
	if d.i == start+1 {
		*out = float64(d.b[start] - '0') // one digit: exact without strconv
		return true
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil {
		return false // out of range: encoding/json's UnmarshalTypeError
	}
	*out = f
	return true
}

func (d *resultDecoder) floatPtr(out **float64) bool {
	if d.null() {
		return true
	}
	var f float64
	if !d.float(&f) {
		return false
	}
	*out = &f
	return true
}

// str reads a string as encoding/json does (its unquote): the bytes
// themselves when there is no escape and they are valid UTF-8.
func (d *resultDecoder) str(out *string) bool {
	if !d.peek('"') {
		return false
	}
	start := d.i + 1
	end, plain := stringEnd(d.b, start)
	if end < 0 {
		return false
	}
	d.i = end + 1
	s := d.b[start:end]
	if plain || (bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s)) {
		*out = string(s)
		return true
	}
	*out = unquoteResult(s)
	return true
}

// raw reads any value and keeps a copy of its bytes, as json.RawMessage's
// UnmarshalJSON does; null too, which it keeps as the four bytes "null".
func (d *resultDecoder) raw(out *json.RawMessage) bool {
	start := d.i
	if !d.skip(0) {
		return false
	}
	*out = append(json.RawMessage(nil), d.b[start:d.i]...)
	return true
}

// skip checks the syntax of one value and passes it. The keys of its
// objects are not looked at beyond syntax: a RawMessage keeps repeats,
// which are decodeStrict's to refuse.
func (d *resultDecoder) skip(depth int) bool {
	if d.i >= len(d.b) || depth > maxQuickDepth {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{', c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		d.i++
		d.space()
		if d.peek(closing) {
			d.i++
			return true
		}
		for {
			if closing == '}' {
				if !d.peek('"') || !d.skipString() {
					return false
				}
				d.space()
				if !d.peek(':') {
					return false
				}
				d.i++
				d.space()
			}
			if !d.skip(depth + 1) {
				return false
			}
			d.space()
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
				d.space()
			case closing:
				d.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return d.skipString()
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

// skipString passes the string at d.i (its opening quote).
func (d *resultDecoder) skipString() bool {
	end, _ := stringEnd(d.b, d.i+1)
	if end < 0 {
		return false
	}
	d.i = end + 1
	return true
}

func (d *resultDecoder) literal(word string) bool {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// number passes a number of JSON's grammar.
func (d *resultDecoder) number() bool {
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

func (d *resultDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && isDigit(d.b[d.i]) {
		d.i++
	}
	return d.i > start
}

func (d *resultDecoder) peek(c byte) bool { return d.i < len(d.b) && d.b[d.i] == c }

func (d *resultDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// stringEnd finds the closing quote of a string whose contents start at
// b[start], checking its escapes as JSON's grammar has them (encoding/json
// refuses the whole input for a bad one). end is -1 when the string is
// not valid JSON; plain says it is printable ASCII without escapes.
func stringEnd(b []byte, start int) (end int, plain bool) {
	plain = true
	for i := start; ; {
		// Eight bytes a turn while none is special: reasons and details
		// are mostly plain text.
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
			return i, plain
		case c < 0x20:
			return -1, false
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return -1, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1, false
					}
				}
				i += 6
			default:
				return -1, false
			}
		case c >= utf8.RuneSelf:
			plain = false
			i++
		default:
			i++
		}
	}
}

// stringSpecial is non-zero when a byte of x is ≥ 0x80, < 0x20, '"' or
// '\\'. It may mark a plain byte above a special one (a borrow), never
// miss one: the caller then looks at the bytes one by one.
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

// unquoteResult resolves the escapes and invalid UTF-8 of a string's
// contents, which stringEnd has checked, as encoding/json's unquoteBytes
// does: a surrogate that is not half of a pair, and each byte that is not
// part of valid UTF-8, becomes U+FFFD.
func unquoteResult(s []byte) string {
	var b strings.Builder
	b.Grow(len(s))
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				rr := hex4(s[r+2 : r+6])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:r+6])); dec != unicode.ReplacementChar {
							r += 6
							b.WriteRune(dec)
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b.WriteRune(rr)
				continue
			default: // '"', '\\', '/'
				b.WriteByte(s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			b.WriteRune(rr) // the same bytes when valid, U+FFFD for one that is not
			r += size
		}
	}
	return b.String()
}

// hex4 decodes four hex digits that stringEnd has checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

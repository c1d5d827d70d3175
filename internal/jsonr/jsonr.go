// Package jsonr reads JSON values as encoding/json decodes them, for the
// decoders on hot paths that take a known shape by hand — the host's
// measure-result decoder (host/internal/plugin) and the Go guest SDK's
// request decoder (sdk/guest) — and leave anything else to encoding/json.
//
// The invariant is equality with encoding/json: a Reader method that
// returns true has read what json.Unmarshal reads there (a string's text
// unescaped as its unquote does, a number as strconv.ParseFloat of the
// literal, a raw value's bytes as json.RawMessage keeps them) and has
// checked the syntax of everything it passed; false means "not sure", and
// the caller gives up on its fast path (a Reader is not reused after a
// false). The callers' fuzz tests hold their decoders, and so this
// package, to json.Unmarshal. It imports only the standard library and
// builds for every target, Wasm guests included; jsonw is its writing
// counterpart.
package jsonr

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Reader reads JSON from B at I.
type Reader struct {
	B []byte
	I int
}

// Peek reports whether the byte at I is c.
func (r *Reader) Peek(c byte) bool { return r.I < len(r.B) && r.B[r.I] == c }

// Space passes JSON whitespace.
func (r *Reader) Space() {
	for r.I < len(r.B) {
		switch r.B[r.I] {
		case ' ', '\t', '\n', '\r':
			r.I++
		default:
			return
		}
	}
}

// Literal passes word (true, false, null) if it is at I.
func (r *Reader) Literal(word string) bool {
	if len(r.B)-r.I < len(word) || string(r.B[r.I:r.I+len(word)]) != word {
		return false
	}
	r.I += len(word)
	return true
}

// Number passes a number of JSON's grammar.
func (r *Reader) Number() bool {
	if r.Peek('-') {
		r.I++
	}
	switch {
	case r.Peek('0'):
		r.I++
	case r.I < len(r.B) && '1' <= r.B[r.I] && r.B[r.I] <= '9':
		r.digits()
	default:
		return false
	}
	if r.Peek('.') {
		r.I++
		if !r.digits() {
			return false
		}
	}
	if r.Peek('e') || r.Peek('E') {
		r.I++
		if r.Peek('+') || r.Peek('-') {
			r.I++
		}
		if !r.digits() {
			return false
		}
	}
	return true
}

func (r *Reader) digits() bool {
	start := r.I
	for r.I < len(r.B) && '0' <= r.B[r.I] && r.B[r.I] <= '9' {
		r.I++
	}
	return r.I > start
}

// Object reads an object, calling field at each member's value; field
// returns false for a key it does not know. Keys must be plain — printable
// ASCII without escapes, as the ABI's are — since encoding/json matches a
// key without regard to case or escapes: any other key is false. A
// repeated key reaches field again; a caller whose fields start from zero
// refuses it there (encoding/json keeps the last).
func (r *Reader) Object(field func(key []byte) bool) bool {
	if !r.Peek('{') {
		return false
	}
	r.I++
	r.Space()
	if r.Peek('}') {
		r.I++
		return true
	}
	for {
		if !r.Peek('"') {
			return false
		}
		start := r.I + 1
		end, plain := StringEnd(r.B, start)
		if end < 0 || !plain {
			return false
		}
		r.I = end + 1
		r.Space()
		if !r.Peek(':') {
			return false
		}
		r.I++
		r.Space()
		if !field(r.B[start:end]) || !r.Next('}') {
			return false
		}
		if r.B[r.I-1] == '}' {
			return true
		}
	}
}

// Array reads an array, calling elem at each element.
func (r *Reader) Array(elem func() bool) bool {
	if !r.Peek('[') {
		return false
	}
	r.I++
	r.Space()
	if r.Peek(']') {
		r.I++
		return true
	}
	for {
		if !elem() || !r.Next(']') {
			return false
		}
		if r.B[r.I-1] == ']' {
			return true
		}
	}
}

// Float reads a number into out as encoding/json does for a float64:
// ParseFloat of the literal, whose grammar has been checked first (so
// ParseFloat's wider syntax, hex and underscores, never applies). A
// number out of range is false: encoding/json's UnmarshalTypeError.
func (r *Reader) Float(out *float64) bool {
	start := r.I
	if !r.Number() {
		return false
	}
	if r.I == start+1 {
		*out = float64(r.B[start] - '0') // one digit: exact without strconv
		return true
	}
	f, err := strconv.ParseFloat(string(r.B[start:r.I]), 64)
	if err != nil {
		return false
	}
	*out = f
	return true
}

// Str reads a string into out, unescaped as encoding/json's unquote
// does: the bytes themselves when there is no escape and they are valid
// UTF-8.
func (r *Reader) Str(out *string) bool {
	if !r.Peek('"') {
		return false
	}
	start := r.I + 1
	end, plain := StringEnd(r.B, start)
	if end < 0 {
		return false
	}
	r.I = end + 1
	s := r.B[start:end]
	if plain || (!hasBackslash(s) && utf8.Valid(s)) {
		*out = string(s)
		return true
	}
	*out = Unquote(s)
	return true
}

func hasBackslash(s []byte) bool {
	for _, c := range s {
		if c == '\\' {
			return true
		}
	}
	return false
}

// Raw reads any value, null included, and keeps a copy of its bytes, as
// json.RawMessage's UnmarshalJSON does (null as the four bytes).
func (r *Reader) Raw(out *json.RawMessage, maxDepth int) bool {
	start := r.I
	if !r.Skip(maxDepth) {
		return false
	}
	*out = append(json.RawMessage(nil), r.B[start:r.I]...)
	return true
}

// Skip checks the syntax of one value and passes it; nesting deeper than
// maxDepth is false. The keys of its objects are checked as strings only:
// a repeat is the caller's to refuse if it must.
func (r *Reader) Skip(maxDepth int) bool { return r.skip(0, maxDepth) }

func (r *Reader) skip(depth, maxDepth int) bool {
	if r.I >= len(r.B) || depth > maxDepth {
		return false
	}
	switch c := r.B[r.I]; {
	case c == '{', c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		r.I++
		r.Space()
		if r.Peek(closing) {
			r.I++
			return true
		}
		for {
			if closing == '}' {
				if !r.SkipString() {
					return false
				}
				r.Space()
				if !r.Peek(':') {
					return false
				}
				r.I++
				r.Space()
			}
			if !r.skip(depth+1, maxDepth) {
				return false
			}
			if !r.Next(closing) {
				return false
			}
			if r.B[r.I-1] == closing {
				return true
			}
		}
	case c == '"':
		return r.SkipString()
	case c == '-' || ('0' <= c && c <= '9'):
		return r.Number()
	case c == 't':
		return r.Literal("true")
	case c == 'f':
		return r.Literal("false")
	case c == 'n':
		return r.Literal("null")
	}
	return false
}

// SkipString passes the string whose opening quote is at I.
func (r *Reader) SkipString() bool {
	if !r.Peek('"') {
		return false
	}
	end, _ := StringEnd(r.B, r.I+1)
	if end < 0 {
		return false
	}
	r.I = end + 1
	return true
}

// Next passes the space and the ',' or closing byte after a member or an
// element, and the space after a ','; the caller tells which it was from
// B[I-1].
func (r *Reader) Next(closing byte) bool {
	r.Space()
	if r.I >= len(r.B) {
		return false
	}
	switch r.B[r.I] {
	case ',':
		r.I++
		r.Space()
		return true
	case closing:
		r.I++
		return true
	}
	return false
}

// StringEnd finds the closing quote of a string whose contents start at
// b[start], checking its escapes as JSON's grammar has them (encoding/json
// refuses the whole input for a bad one). end is -1 when the string is not
// valid JSON; plain says it is printable ASCII without escapes, so the
// bytes are the string.
func StringEnd(b []byte, start int) (end int, plain bool) {
	plain = true
	for i := start; ; {
		// 32, then 8 bytes a turn while none is special: in a Wasm guest
		// every loop turn passes the host's termination check, which costs
		// more than the arithmetic.
		for ; i+32 <= len(b); i += 32 {
			if special(binary.LittleEndian.Uint64(b[i:]))|special(binary.LittleEndian.Uint64(b[i+8:]))|
				special(binary.LittleEndian.Uint64(b[i+16:]))|special(binary.LittleEndian.Uint64(b[i+24:])) != 0 {
				break
			}
		}
		for ; i+8 <= len(b); i += 8 {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				// The lowest marked byte is a special one (a borrow only
				// marks bytes above it): go straight to it, rather than
				// one plain byte a turn, each turn testing the words again.
				i += bits.TrailingZeros64(m) >> 3
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
				if hex4(b[i:]) < 0 {
					return -1, false
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

// special is non-zero when a byte of x is ≥ 0x80, < 0x20, '"' or '\\'. It
// may mark a plain byte above a special one (a borrow), never miss one:
// the caller then looks at the bytes one by one.
func special(x uint64) uint64 {
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

// Unquote resolves the escapes and invalid UTF-8 of a string's contents,
// which StringEnd has checked, as encoding/json's unquoteBytes does: a
// surrogate that is not half of a pair, and each byte that is not part of
// valid UTF-8, becomes U+FFFD.
func Unquote(s []byte) string {
	var b strings.Builder // one allocation: the string itself
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			switch s[i+1] {
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
				rr := hex4(s[i:])
				i += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, hex4(s[i:])); dec != unicode.ReplacementChar {
						i += 6
						b.WriteRune(dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				b.WriteRune(rr)
				continue
			default: // '"', '\\', '/'
				b.WriteByte(s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			rr, size := utf8.DecodeRune(s[i:])
			b.WriteRune(rr) // the same bytes when valid, U+FFFD when not
			i += size
		}
	}
	return b.String()
}

// hex4 decodes the \uXXXX at the start of s; -1 if it is not one.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

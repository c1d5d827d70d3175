package jsonw

import (
	"encoding/binary"
	"math/bits"
)

// MarshalForm reports whether json.Marshal writes raw, a json.RawMessage,
// exactly as it is: raw is valid JSON (as json.Valid has it: no UTF-8
// check inside strings), compact (no space, tab, CR or LF outside
// strings), and holds none of the bytes Marshal escapes in a RawMessage
// ('<', '>', '&', and U+2028 and U+2029 as UTF-8). A kind's details and a
// metric's config are in that form whenever encoding/json or these
// appenders wrote them, and then a caller may copy them where it would
// otherwise validate and compact them.
//
// It answers in one pass; nesting deeper than maxFormDepth gets false
// ("not sure": the caller encodes), never a wrong true. FuzzMarshalForm
// holds it to json.Marshal.
func MarshalForm(raw []byte) bool {
	f := formChecker{b: raw}
	return f.value(0) && f.i == len(raw)
}

// maxFormDepth bounds the nesting MarshalForm follows (encoding/json's
// own bound is 10,000).
const maxFormDepth = 512

type formChecker struct {
	b []byte
	i int
}

func (f *formChecker) value(depth int) bool {
	if f.i >= len(f.b) || depth >= maxFormDepth {
		return false
	}
	switch c := f.b[f.i]; {
	case c == '"':
		return f.str()
	case c == '{':
		f.i++
		if f.at('}') {
			f.i++
			return true
		}
		for {
			if !f.at('"') || !f.str() || !f.at(':') {
				return false
			}
			f.i++
			if !f.value(depth + 1) {
				return false
			}
			if f.at('}') {
				f.i++
				return true
			}
			if !f.at(',') {
				return false
			}
			f.i++
		}
	case c == '[':
		f.i++
		if f.at(']') {
			f.i++
			return true
		}
		for {
			if !f.value(depth + 1) {
				return false
			}
			if f.at(']') {
				f.i++
				return true
			}
			if !f.at(',') {
				return false
			}
			f.i++
		}
	case c == 't':
		return f.word("true")
	case c == 'f':
		return f.word("false")
	case c == 'n':
		return f.word("null")
	}
	return f.number()
}

func (f *formChecker) at(c byte) bool { return f.i < len(f.b) && f.b[f.i] == c }

func (f *formChecker) word(w string) bool {
	if len(f.b)-f.i < len(w) || string(f.b[f.i:f.i+len(w)]) != w {
		return false
	}
	f.i += len(w)
	return true
}

// number passes over JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (f *formChecker) number() bool {
	b, i := f.b, f.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	f.i = i
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// str passes over a string starting at its quote. Eight bytes at a time
// it skips what needs no look: printable ASCII but the quote, the
// backslash and < > &.
func (f *formChecker) str() bool {
	b, i := f.b, f.i+1
	for {
		for ; i+8 <= len(b); i += 8 {
			if m := escapeStops(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			f.i = i + 1
			return true
		case c == '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return false
				}
				i += 6
			default:
				return false
			}
		case c < 0x20, c == '<', c == '>', c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			return false // U+2028, U+2029: Marshal escapes them
		default:
			i++ // any other byte, ASCII or not, valid UTF-8 or not
		}
	}
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

package judge

import (
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// Appenders that write exactly what json.Marshal writes for a string, a
// float64 and a json.RawMessage, for the request body and the cache key
// (wire.go, plan.go). json.Marshal reaches the same bytes through
// reflection, re-compacts and HTML-escapes a RawMessage on every call, and
// escapes a byte at a time; a judge call escaped its 2.5 KB prompt twice
// (body and key) and its schema twice that way. What they must match is
// encoding/json's encode.go (appendString, floatEncoder) and indent.go
// (appendCompact with escaping on); FuzzAppendJSON and the request and
// key fuzz targets compare them with json.Marshal.

// hexDigits are the digits of a \u00XX escape, lower case as encoding/json
// writes them.
const hexDigits = "0123456789abcdef"

// escapeStops marks (as zeroBytes does: the lowest mark is exact) the
// lowest byte of x that json.Marshal does not copy into a string as it
// is: a control character, any byte of a multi-byte sequence (checked for
// valid UTF-8, U+2028 and U+2029), a backslash, and " & < > (HTML escaping
// is on). Setting bit 2 maps " (0x22) and & (0x26), and only them, to &;
// setting bit 1 maps < (0x3c) and > (0x3e), and only them, to >.
func escapeStops(x uint64) uint64 {
	return (x-ones*0x20)&^x&highs | x&highs | zeroBytes(x^(ones*'\\')) |
		zeroBytes((x|ones*0x04)^(ones*'&')) | zeroBytes((x|ones*0x02)^(ones*'>'))
}

// plainEnd is the index of the first byte at or after i that json.Marshal
// does not copy into a string as it is, len(s) if none.
func plainEnd(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		t := s[i : i+8]
		x := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
		if m := escapeStops(x); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(s) && htmlSafe(s[i]) {
		i++
	}
	return i
}

// htmlSafe reports an ASCII byte json.Marshal copies into a string as it
// is (encoding/json's htmlSafeSet).
func htmlSafe(c byte) bool {
	return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// appendJSONString appends s quoted as json.Marshal writes a string.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendStringBody(dst, s)
	return append(dst, '"')
}

// appendStringBody appends s escaped as json.Marshal escapes a string,
// without the quotes. Escaping is per rune and a rune never spans an
// ASCII byte, so the body of a+b is the body of a then that of b whenever b
// begins with an ASCII byte (requestBody relies on it).
func appendStringBody(dst []byte, s string) []byte {
	start := 0
	for i := 0; ; {
		if i = plainEnd(s, i); i >= len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// The other control characters, and < > & (HTML escaping).
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// finite reports a float json.Marshal encodes (it refuses NaN and ±Inf).
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendJSONFloat appends f as json.Marshal writes a finite float64: like
// %g with ES6's exponent cutoffs, and an exponent's leading zero dropped.
// The caller checks finite(f).
func appendJSONFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// maxRawDepth bounds the nesting rawJSONForm follows; deeper documents
// (encoding/json's own limit is 10,000) are left to encoding/json.
const maxRawDepth = 256

// rawJSONForm is raw as json.Marshal writes a json.RawMessage: compacted,
// with < > & U+2028 U+2029 escaped. It is raw itself (not a copy) when
// nothing changes, as for a canonical schema without those characters.
// ok is false when raw is not valid JSON, or nested deeper than
// maxRawDepth: the caller leaves it to json.Marshal, which has the error
// to give. A nil raw is null, as RawMessage's MarshalJSON says.
func rawJSONForm(raw []byte) (out []byte, ok bool) {
	if raw == nil {
		return []byte("null"), true
	}
	c := rawCompactor{src: raw}
	p, ok := c.value(0, 0)
	if !ok || skipSpace(raw, p) != len(raw) {
		return nil, false
	}
	c.drop(p, len(raw))
	if c.dst == nil {
		return raw, true
	}
	return append(c.dst, raw[c.start:]...), true
}

// rawCompactor validates a JSON document and writes its compacted,
// HTML-escaped form; dst stays nil until a byte of src has to change, and
// src[start:] is what has not been copied yet.
type rawCompactor struct {
	src   []byte
	dst   []byte
	start int
}

// drop leaves src[from:to] out of the output.
func (c *rawCompactor) drop(from, to int) {
	if from == to {
		return
	}
	c.replace(from, to)
}

// replace writes with in place of src[from:to].
func (c *rawCompactor) replace(from, to int, with ...byte) {
	if c.dst == nil {
		c.dst = make([]byte, 0, len(c.src)+len(c.src)/8)
	}
	c.dst = append(c.dst, c.src[c.start:from]...)
	c.dst = append(c.dst, with...)
	c.start = to
}

// space skips whitespace at p, leaving it out.
func (c *rawCompactor) space(p int) int {
	q := skipSpace(c.src, p)
	c.drop(p, q)
	return q
}

// value checks the value at p (whitespace before it allowed) and returns
// the index after it.
func (c *rawCompactor) value(p, depth int) (int, bool) {
	src := c.src
	p = c.space(p)
	if p >= len(src) {
		return 0, false
	}
	switch src[p] {
	case '"':
		end, _, ok := stringEnd(src, p+1)
		if !ok {
			return 0, false
		}
		c.escapeHTML(p+1, end)
		return end + 1, true
	case '{', '[':
		if depth >= maxRawDepth {
			return 0, false
		}
		return c.container(p, depth+1)
	case 't':
		return literalEnd(src, p, "true")
	case 'f':
		return literalEnd(src, p, "false")
	case 'n':
		return literalEnd(src, p, "null")
	}
	end, _, ok := scanNumber(src, p)
	return end, ok
}

// container checks the object or array that opens at p.
func (c *rawCompactor) container(p, depth int) (int, bool) {
	src := c.src
	object := src[p] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	p = c.space(p + 1)
	if p < len(src) && src[p] == closer {
		return p + 1, true
	}
	for {
		if object {
			p = c.space(p)
			if p >= len(src) || src[p] != '"' {
				return 0, false
			}
			end, _, ok := stringEnd(src, p+1)
			if !ok {
				return 0, false
			}
			c.escapeHTML(p+1, end)
			p = c.space(end + 1)
			if p >= len(src) || src[p] != ':' {
				return 0, false
			}
			p++
		}
		var ok bool
		if p, ok = c.value(p, depth); !ok {
			return 0, false
		}
		p = c.space(p)
		if p >= len(src) {
			return 0, false
		}
		switch src[p] {
		case ',':
			p++
		case closer:
			return p + 1, true
		default:
			return 0, false
		}
	}
}

// htmlStops marks (exactly, for the lowest) the lowest byte of x that
// encoding/json's compaction escapes inside a string: <, > or &, or 0xE2,
// which begins U+2028 and U+2029.
func htmlStops(x uint64) uint64 {
	return zeroBytes(x^(ones*'<')) | zeroBytes(x^(ones*'>')) | zeroBytes(x^(ones*'&')) | zeroBytes(x^(ones*0xE2))
}

// escapeHTML escapes the body src[from:to] of a valid string as
// appendCompact does.
func (c *rawCompactor) escapeHTML(from, to int) {
	src := c.src
	for i := from; i < to; {
		if i+8 <= to {
			m := htmlStops(load64(src, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		switch b := src[i]; b {
		case '<', '>', '&':
			c.replace(i, i+1, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		case 0xE2:
			if i+2 < to && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
				c.replace(i, i+3, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
				i += 3
				continue
			}
		}
		i++
	}
}

// literalEnd checks that lit is at p.
func literalEnd(buf []byte, p int, lit string) (int, bool) {
	if len(buf)-p < len(lit) || string(buf[p:p+len(lit)]) != lit {
		return 0, false
	}
	return p + len(lit), true
}

package judge

import "math/bits"

// rawJSONForm writes exactly what json.Marshal writes for a
// json.RawMessage, for the request body and the cache key (wire.go,
// plan.go); strings and floats are internal/jsonw's. json.Marshal
// re-compacts and HTML-escapes a RawMessage on every call; a judge call
// did that to its schema twice (body and key). What it must match is
// encoding/json's indent.go (appendCompact with escaping on);
// FuzzAppendJSON and the request and key fuzz targets compare it with
// json.Marshal.

// hexDigits are the digits of a \u00XX escape, lower case as encoding/json
// writes them.
const hexDigits = "0123456789abcdef"

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

package engine

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// A dataset record is split into its members by hand when it is plain
// enough (dataset.go): encoding/json's map of raw values costs a dataset
// read most of its time. Anything outside the plain subset goes to
// encoding/json, which then decides (FuzzSplitObjectFast).

// maxFastDepth bounds the nesting splitObjectFast follows; deeper values
// go to encoding/json (whose own limit is 10,000).
const maxFastDepth = 64

type lineDecoder struct {
	b []byte
	i int
	// space allows JSON whitespace between tokens.
	space bool
}

// sp passes over whitespace where it is allowed.
func (d *lineDecoder) sp() {
	if !d.space {
		return
	}
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// lit consumes the token c if it is next.
func (d *lineDecoder) lit(c byte) bool {
	d.sp()
	return d.ch(c)
}

// ch consumes the byte c if it is next (inside a token).
func (d *lineDecoder) ch(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// word consumes w if it is next.
func (d *lineDecoder) word(w string) bool {
	d.sp()
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

// strSpan scans a string, returning its raw contents (between the quotes)
// and whether it holds a backslash. It refuses control characters, as
// JSON does. The closing quote and any backslash are found with
// bytes.IndexByte (vector instructions), control characters eight bytes
// at a time.
func (d *lineDecoder) strSpan() (raw []byte, escaped, ok bool) {
	if !d.lit('"') {
		return nil, false, false
	}
	start := d.i
	for {
		q := bytes.IndexByte(d.b[d.i:], '"')
		if q < 0 {
			return nil, false, false
		}
		seg := d.b[d.i : d.i+q]
		bs := bytes.IndexByte(seg, '\\')
		if bs < 0 {
			if hasControl(seg) {
				return nil, false, false
			}
			d.i += q + 1
			return d.b[start : d.i-1], escaped, true
		}
		// An escape before the quote: check up to it, pass over it, and
		// look for the closing quote again (the quote found may be escaped).
		if hasControl(seg[:bs]) {
			return nil, false, false
		}
		escaped = true
		d.i += bs + 1
		if d.i >= len(d.b) {
			return nil, false, false
		}
		switch d.b[d.i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			d.i++
		case 'u':
			if len(d.b)-d.i < 5 {
				return nil, false, false
			}
			for _, h := range d.b[d.i+1 : d.i+5] {
				if !isHex(h) {
					return nil, false, false
				}
			}
			d.i += 5
		default:
			return nil, false, false
		}
	}
}

// hasControl reports whether b holds a byte below 0x20.
func hasControl(b []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte below 0x20 borrows in x-0x20…, setting its high bit
		// where x's own high bit is clear (the classic has-less-than).
		if (x-lo)&^x&hi != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// numSpan scans a JSON number.
func (d *lineDecoder) numSpan() ([]byte, bool) {
	d.sp()
	start := d.i
	d.ch('-')
	switch {
	case d.ch('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	if d.ch('.') && !d.digits() {
		return nil, false
	}
	if d.ch('e') || d.ch('E') {
		if !d.ch('+') {
			d.ch('-')
		}
		if !d.digits() {
			return nil, false
		}
	}
	return d.b[start:d.i], true
}

// digits consumes one or more digits.
func (d *lineDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// skip checks and passes over any JSON value, as encoding/json's scanner
// accepts it for a json.RawMessage (no UTF-8 check in strings).
func (d *lineDecoder) skip(depth int) bool {
	d.sp()
	if d.i >= len(d.b) || depth > maxFastDepth {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, _, ok := d.strSpan()
		return ok
	case c == '{':
		d.i++
		if d.lit('}') {
			return true
		}
		for {
			if _, _, ok := d.strSpan(); !ok || !d.lit(':') || !d.skip(depth+1) {
				return false
			}
			if d.lit('}') {
				return true
			}
			if !d.lit(',') {
				return false
			}
		}
	case c == '[':
		d.i++
		if d.lit(']') {
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			if d.lit(']') {
				return true
			}
			if !d.lit(',') {
				return false
			}
		}
	case c == 't':
		return d.word("true")
	case c == 'f':
		return d.word("false")
	case c == 'n':
		return d.word("null")
	default:
		_, ok := d.numSpan()
		return ok
	}
}

// objectMember is one key and its raw value in a JSON object.
type objectMember struct {
	key string
	val []byte // the value's bytes, without surrounding whitespace
}

// splitObjectFast splits a JSON object into its members in order, as
// json.Unmarshal into a map[string]json.RawMessage would give them (same
// keys, same raw values), appending to members. It reports false for
// anything it leaves to encoding/json: escaped or invalid-UTF-8 keys, a
// repeated key (the map keeps the last), nesting deeper than
// maxFastDepth, and any syntax error, whose message is encoding/json's.
func splitObjectFast(raw []byte, members []objectMember) ([]objectMember, bool) {
	d := lineDecoder{b: raw, space: true}
	if !d.lit('{') {
		return members, false
	}
	if !d.lit('}') {
		for {
			k, escaped, ok := d.strSpan()
			if !ok || escaped || !d.lit(':') {
				return members, false
			}
			for _, c := range k {
				if c >= utf8.RuneSelf {
					if !utf8.Valid(k) {
						return members, false
					}
					break
				}
			}
			for _, m := range members {
				if m.key == string(k) {
					return members, false
				}
			}
			d.sp()
			start := d.i
			if !d.skip(1) {
				return members, false
			}
			members = append(members, objectMember{key: string(k), val: raw[start:d.i]})
			if d.lit('}') {
				break
			}
			if !d.lit(',') {
				return members, false
			}
		}
	}
	d.sp()
	return members, d.i == len(d.b)
}

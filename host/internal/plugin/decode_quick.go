package plugin

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// quickCheckJSON is checkJSON's fast path: one pass over raw, no
// tokens, no maps, no allocation for the results guests write every call.
// It answers true only when raw is certainly one JSON object that
// checkJSON accepts; false means "not sure", and the caller then runs
// checkJSON, which decides and names the problem. So it can only make
// decodeStrict faster, never more lenient: FuzzQuickCheckJSON holds it to
// "quickCheckJSON(raw) implies checkJSON(raw) == nil".
//
// It says "not sure" for whatever it does not handle itself: a key with
// an escape or a non-ASCII byte (checkJSON folds those by Unicode rules),
// an object with more than maxQuickKeys keys, nesting deeper than
// maxQuickDepth.
func quickCheckJSON(raw []byte) bool {
	q := quickChecker{b: raw}
	q.skipSpace()
	if q.i >= len(q.b) || q.b[q.i] != '{' {
		return false
	}
	if !q.value(0) {
		return false
	}
	q.skipSpace()
	return q.i == len(q.b)
}

const (
	// maxQuickKeys bounds the keys of one object the fast path compares
	// pairwise (and the keys held for all open objects); results have a
	// handful.
	maxQuickKeys = 64
	// maxQuickDepth is far below encoding/json's own nesting limit, so
	// that limit is always checkJSON's to report.
	maxQuickDepth = 64
)

type quickChecker struct {
	b []byte
	i int
	// keys[:nkeys] are the keys of the open objects, innermost last (an
	// array in the checker, which stays on the stack).
	keys  [maxQuickKeys][]byte
	nkeys int
}

func (q *quickChecker) skipSpace() {
	for q.i < len(q.b) {
		switch q.b[q.i] {
		case ' ', '\t', '\n', '\r':
			q.i++
		default:
			return
		}
	}
}

// value checks one value starting at q.i (no leading space).
func (q *quickChecker) value(depth int) bool {
	if q.i >= len(q.b) || depth > maxQuickDepth {
		return false
	}
	switch c := q.b[q.i]; {
	case c == '{':
		return q.object(depth + 1)
	case c == '[':
		return q.array(depth + 1)
	case c == '"':
		_, ok := q.str()
		return ok
	case c == '-' || ('0' <= c && c <= '9'):
		return q.number()
	case c == 't':
		return q.literal("true")
	case c == 'f':
		return q.literal("false")
	case c == 'n':
		return q.literal("null")
	}
	return false
}

func (q *quickChecker) literal(word string) bool {
	if len(q.b)-q.i < len(word) || string(q.b[q.i:q.i+len(word)]) != word {
		return false
	}
	q.i += len(word)
	return true
}

func (q *quickChecker) object(depth int) bool {
	q.i++ // '{'
	first := q.nkeys
	defer func() { q.nkeys = first }()
	q.skipSpace()
	if q.i < len(q.b) && q.b[q.i] == '}' {
		q.i++
		return true
	}
	for {
		if q.i >= len(q.b) || q.b[q.i] != '"' {
			return false
		}
		key, ok := q.str()
		if !ok || !plainKey(key) || q.nkeys == len(q.keys) {
			return false
		}
		for _, k := range q.keys[first:q.nkeys] {
			if equalFoldASCII(k, key) {
				return false // a duplicate: checkJSON names it
			}
		}
		q.keys[q.nkeys] = key
		q.nkeys++
		q.skipSpace()
		if q.i >= len(q.b) || q.b[q.i] != ':' {
			return false
		}
		q.i++
		q.skipSpace()
		if !q.value(depth) {
			return false
		}
		q.skipSpace()
		if q.i >= len(q.b) {
			return false
		}
		switch q.b[q.i] {
		case ',':
			q.i++
			q.skipSpace()
		case '}':
			q.i++
			return true
		default:
			return false
		}
	}
}

func (q *quickChecker) array(depth int) bool {
	q.i++ // '['
	q.skipSpace()
	if q.i < len(q.b) && q.b[q.i] == ']' {
		q.i++
		return true
	}
	for {
		if !q.value(depth) {
			return false
		}
		q.skipSpace()
		if q.i >= len(q.b) {
			return false
		}
		switch q.b[q.i] {
		case ',':
			q.i++
			q.skipSpace()
		case ']':
			q.i++
			return true
		default:
			return false
		}
	}
}

// str checks a string at q.i (its opening quote) and returns its raw
// contents, escapes unresolved. Bytes ≥ 0x80 pass as they do in
// encoding/json (invalid UTF-8 becomes U+FFFD when decoded).
func (q *quickChecker) str() ([]byte, bool) {
	q.i++ // '"'
	start := q.i
	for q.i < len(q.b) {
		q.i = plainRun(q.b, q.i)
		if q.i >= len(q.b) {
			break
		}
		c := q.b[q.i]
		switch {
		case c == '"':
			s := q.b[start:q.i]
			q.i++
			return s, true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if q.i+1 >= len(q.b) {
				return nil, false
			}
			switch q.b[q.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				q.i += 2
			case 'u':
				if q.i+6 > len(q.b) {
					return nil, false
				}
				for _, h := range q.b[q.i+2 : q.i+6] {
					if !isHex(h) {
						return nil, false
					}
				}
				q.i += 6
			default:
				return nil, false
			}
		default:
			q.i++
		}
	}
	return nil, false
}

// number checks a JSON number at q.i that is a finite float64.
func (q *quickChecker) number() bool {
	start := q.i
	if q.b[q.i] == '-' {
		q.i++
	}
	if q.i >= len(q.b) {
		return false
	}
	switch c := q.b[q.i]; {
	case c == '0':
		q.i++
	case '1' <= c && c <= '9':
		for q.i < len(q.b) && isDigit(q.b[q.i]) {
			q.i++
		}
	default:
		return false
	}
	integer := true
	if q.i < len(q.b) && q.b[q.i] == '.' {
		integer = false
		q.i++
		if !q.digits() {
			return false
		}
	}
	if q.i < len(q.b) && (q.b[q.i] == 'e' || q.b[q.i] == 'E') {
		integer = false
		q.i++
		if q.i < len(q.b) && (q.b[q.i] == '+' || q.b[q.i] == '-') {
			q.i++
		}
		if !q.digits() {
			return false
		}
	}
	// Fifteen digits or fewer always fit a float64.
	if integer && q.i-start <= 15 {
		return true
	}
	f, err := strconv.ParseFloat(string(q.b[start:q.i]), 64)
	return err == nil && !math.IsInf(f, 0)
}

// digits consumes one or more digits.
func (q *quickChecker) digits() bool {
	start := q.i
	for q.i < len(q.b) && isDigit(q.b[q.i]) {
		q.i++
	}
	return q.i > start
}

// plainKey: printable ASCII without escapes, the keys whose folding is
// ASCII upper case.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

func equalFoldASCII(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if upperASCII(a[i]) != upperASCII(b[i]) {
			return false
		}
	}
	return true
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// plainRun returns the index of the first quote, backslash or control
// byte at or after i, eight bytes at a time, and len(b) or the last
// partial word's start if none (the byte loop takes it from there). A
// string's text is most of a result, and a byte at a time was most of
// checking it. Of the marks the word tests set, the lowest is exact (a
// borrow only runs upwards), so it is the byte's index.
func plainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if m := ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	return i
}

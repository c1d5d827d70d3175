package judge

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentanvil/anvil/internal/jsonw"
)

// A structured reply's content is parsed once (parseObject): what that
// parse finds — the canonical bytes the response carries and the value
// tree the schema validates and the score is read from — serves every later
// step, where it used to be decoded three times (the tolerant parse,
// jsonschema's decode of the canonical bytes, rawScore's decode of them).
//
// The one-pass parser below takes only the JSON it is sure of: strict
// RFC 8259 syntax as encoding/json accepts it, valid UTF-8, no surrogate
// escapes, nesting at most maxObjectDepth. Anything else — every error
// included — goes the reference way (referenceObject), so what is accepted,
// what is refused and how a refusal is worded stay encoding/json's, and
// FuzzParseObject holds the two equal where the fast one answers.

// replyObject is a structured reply's JSON object, parsed once.
type replyObject struct {
	// canonical is the object re-encoded with sorted keys, compact, as
	// canonicalJSON makes it: what the response and the cache carry.
	canonical json.RawMessage
	// value is the object as jsonschema.UnmarshalJSON decodes canonical:
	// map[string]any, []any, string, json.Number, bool and nil.
	value any
}

// maxObjectDepth bounds the one-pass parser's recursion; deeper replies
// (none a judge writes) take the reference path, whose limit is
// encoding/json's.
const maxObjectDepth = 64

// parseObject is ParseTolerant that also returns the decoded value.
func parseObject(content string) (replyObject, error) {
	start := strings.IndexByte(content, '{')
	end := strings.LastIndexByte(content, '}')
	if start < 0 || end < start {
		return replyObject{}, errors.New("no JSON object found in the reply")
	}
	candidate := content[start : end+1]
	if obj, ok := fastObject(candidate); ok {
		return obj, nil
	}
	// Valid JSON has no comma before a '}' or ']' outside its strings, so
	// a candidate the strip changes is one encoding/json refuses too, and
	// the reference would go on to parse the stripped text.
	if fixed, changed := stripTrailingCommas([]byte(candidate)); changed {
		if obj, ok := fastObject(string(fixed)); ok {
			return obj, nil
		}
	}
	return referenceObject(candidate)
}

// fastObject parses s, which starts with '{', as one JSON object and
// nothing after it; false when it is not sure s is one.
func fastObject(s string) (replyObject, bool) {
	p := objParser{s: s}
	v, ok := p.value(0)
	if !ok {
		return replyObject{}, false
	}
	p.space()
	if p.i != len(s) {
		return replyObject{}, false
	}
	if _, isObject := v.(map[string]any); !isObject {
		return replyObject{}, false
	}
	// Escapes aside, the canonical form is no longer than the text.
	out := appendCanonical(make([]byte, 0, len(s)+16), v)
	return replyObject{canonical: out, value: v}, true
}

type objParser struct {
	s string
	i int
}

func (p *objParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value parses the value at p.i (after whitespace). Numbers, strings and
// literals are checked to end where the caller expects a delimiter: the
// caller rejects whatever else follows.
func (p *objParser) value(depth int) (any, bool) {
	p.space()
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '-' || isDigitByte(c):
		return p.number()
	case strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return true, true
	case strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return false, true
	case strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return nil, true
	}
	return nil, false
}

func (p *objParser) object(depth int) (any, bool) {
	if depth > maxObjectDepth {
		return nil, false
	}
	p.i++ // '{'
	m := map[string]any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		// A repeated key: the last one wins, as in encoding/json.
		m[k] = v
		p.space()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (p *objParser) array(depth int) (any, bool) {
	if depth > maxObjectDepth {
		return nil, false
	}
	p.i++ // '['
	a := []any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, true
		default:
			return nil, false
		}
	}
}

func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and keeps
// its text, as encoding/json's UseNumber does.
func (p *objParser) number() (any, bool) {
	s, i := p.s, p.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && isDigitByte(s[i]) {
			i++
		}
	default:
		return nil, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigitByte(s[i]) {
			return nil, false
		}
		for i < len(s) && isDigitByte(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigitByte(s[i]) {
			return nil, false
		}
		for i < len(s) && isDigitByte(s[i]) {
			i++
		}
	}
	n := json.Number(s[p.i:i])
	p.i = i
	return n, true
}

// str reads the string at p.i. Without escapes it is a substring of the
// reply; invalid UTF-8 and surrogate escapes, which encoding/json replaces
// with U+FFFD by rules of its own, are left to the reference path.
func (p *objParser) str() (string, bool) {
	s := p.s
	i := p.i + 1
	start := i
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return s[start:i], true
		case c == '\\':
			return p.escaped(start, i)
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			i += size
		}
	}
	return "", false
}

// escaped finishes a string whose first escape is at i.
func (p *objParser) escaped(start, i int) (string, bool) {
	s := p.s
	b := make([]byte, 0, len(s)-start)
	b = append(b, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(b), true
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok || (0xD800 <= r && r <= 0xDFFF) {
					return "", false
				}
				b = utf8.AppendRune(b, r)
				i += 4
			default:
				return "", false
			}
			i += 2
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			b = append(b, s[i:i+size]...)
			i += size
		}
	}
	return "", false
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendCanonical encodes v as encoding/json's Encoder does with
// SetEscapeHTML(false): map keys sorted bytewise, no spaces.
func appendCanonical(dst []byte, v any) []byte {
	switch x := v.(type) {
	case map[string]any:
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonw.AppendStringNoHTML(dst, k)
			dst = append(dst, ':')
			dst = appendCanonical(dst, x[k])
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, e)
		}
		return append(dst, ']')
	case string:
		return jsonw.AppendStringNoHTML(dst, x)
	case json.Number:
		return append(dst, x...)
	case bool:
		if x {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

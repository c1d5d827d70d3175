package judge

import (
	"strconv"
	"unicode/utf8"
)

// The fast skip of the alternatives scoring does not read.
//
// A scoring reply with 20 top_logprobs per token is ~60 KB, and all but a
// few of its token's alternative lists are only checked, never kept: a
// token that cannot be (or follow) the score's. Checking them through the
// general scanner (closures per object member, a peek per byte class) was
// most of the decoder's CPU. skipAlternatives walks such a list in one
// loop over the bytes, and accepts an alternative only in the shape
// servers send — members "token" (a string without escapes, or null),
// "logprob" (a number or null) and "bytes" (a list of numbers, or null),
// each at most once, plain keys. Anything else — another key, an escape,
// a repeated member, an alternative that is score evidence — is handed,
// from the alternative's opening brace, to alternative(false), the general
// path; so what is accepted, refused and kept is exactly what that path
// decides (FuzzSkipAlternatives compares the two).

// plainString marks the bytes a JSON string holds as themselves: not the
// closing quote, not a backslash, not a control character.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// isSpace reports JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// skipSpace returns the index of the first non-whitespace byte at or
// after p.
func skipSpace(buf []byte, p int) int {
	for p < len(buf) && buf[p] <= ' ' && isSpace(buf[p]) {
		p++
	}
	return p
}

// skipAlternatives passes over a top_logprobs list (or null) whose
// alternatives are not kept; false when the body is not the ordinary shape.
func (d *replyDecoder) skipAlternatives() bool {
	buf := d.buf
	p := skipSpace(buf, d.i)
	if p >= len(buf) || buf[p] != '[' {
		d.i = p
		return d.array(func() bool { return d.alternative(false) })
	}
	p = skipSpace(buf, p+1)
	if p < len(buf) && buf[p] == ']' {
		d.i = p + 1
		return true
	}
	for {
		if end, ok := d.skipAlternativeFast(p); ok {
			p = end
		} else {
			d.i = p
			if !d.alternative(false) {
				return false
			}
			p = d.i
		}
		p = skipSpace(buf, p)
		if p >= len(buf) {
			return false
		}
		switch buf[p] {
		case ',':
			p = skipSpace(buf, p+1)
		case ']':
			d.i = p + 1
			return true
		default:
			return false
		}
	}
}

// Members of an alternative skipAlternativeFast reads, as bits of a set.
const (
	altToken = 1 << iota
	altLogprob
	altBytes
)

// skipAlternativeFast passes over the alternative object starting at p,
// returning the index after its closing brace. ok false says only that
// this path does not decide it (the general one must), not that it is
// malformed.
func (d *replyDecoder) skipAlternativeFast(p int) (end int, ok bool) {
	buf := d.buf
	n := len(buf)
	if p >= n || buf[p] != '{' {
		return 0, false
	}
	p = skipSpace(buf, p+1)
	if p < n && buf[p] == '}' {
		return p + 1, true
	}
	var seen int
	for {
		// A key: one of the three, spelled plainly.
		if p >= n || buf[p] != '"' {
			return 0, false
		}
		var bit int
		switch {
		case hasAt(buf, p, `"token"`):
			bit, p = altToken, p+len(`"token"`)
		case hasAt(buf, p, `"logprob"`):
			bit, p = altLogprob, p+len(`"logprob"`)
		case hasAt(buf, p, `"bytes"`):
			bit, p = altBytes, p+len(`"bytes"`)
		default:
			return 0, false
		}
		if seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		p = skipSpace(buf, p)
		if p >= n || buf[p] != ':' {
			return 0, false
		}
		p = skipSpace(buf, p+1)
		if p >= n {
			return 0, false
		}
		// Its value.
		if buf[p] == 'n' {
			if !hasAt(buf, p, "null") {
				return 0, false
			}
			p += 4
		} else {
			switch bit {
			case altToken:
				if buf[p] != '"' {
					return 0, false
				}
				start := p + 1
				k := start
				for k < n && plainString[buf[k]] {
					k++
				}
				// An escape or a control character: the general path.
				if k >= n || buf[k] != '"' {
					return 0, false
				}
				// Score evidence in a skipped list: the general path
				// decides whether it is the one kept.
				if adjacentDigits(buf[start:k]) {
					return 0, false
				}
				p = k + 1
			case altLogprob:
				e, exp, ok := scanNumber(buf, p)
				if !ok {
					return 0, false
				}
				// Only a number with an exponent can be out of a
				// float64's range (see floatInRange).
				if exp {
					if _, err := strconv.ParseFloat(string(buf[p:e]), 64); err != nil {
						return 0, false
					}
				}
				p = e
			case altBytes:
				e, ok := scanNumberList(buf, p)
				if !ok {
					return 0, false
				}
				p = e
			}
		}
		p = skipSpace(buf, p)
		if p >= n {
			return 0, false
		}
		switch buf[p] {
		case ',':
			p = skipSpace(buf, p+1)
		case '}':
			return p + 1, true
		default:
			return 0, false
		}
	}
}

// hasAt reports whether buf holds lit at p.
func hasAt(buf []byte, p int, lit string) bool {
	return len(buf)-p >= len(lit) && string(buf[p:p+len(lit)]) == lit
}

// scanNumber checks the JSON number at p and returns the index after it;
// exp says it has an exponent.
func scanNumber(buf []byte, p int) (end int, exp, ok bool) {
	n := len(buf)
	if p < n && buf[p] == '-' {
		p++
	}
	switch {
	case p < n && buf[p] == '0':
		p++
	case p < n && '1' <= buf[p] && buf[p] <= '9':
		p++
		for p < n && isASCIIDigit(buf[p]) {
			p++
		}
	default:
		return 0, false, false
	}
	if p < n && buf[p] == '.' {
		p++
		if p >= n || !isASCIIDigit(buf[p]) {
			return 0, false, false
		}
		for p < n && isASCIIDigit(buf[p]) {
			p++
		}
	}
	if p < n && (buf[p] == 'e' || buf[p] == 'E') {
		exp = true
		p++
		if p < n && (buf[p] == '+' || buf[p] == '-') {
			p++
		}
		if p >= n || !isASCIIDigit(buf[p]) {
			return 0, false, false
		}
		for p < n && isASCIIDigit(buf[p]) {
			p++
		}
	}
	return p, exp, true
}

// scanNumberList checks a list of numbers (a token's UTF-8 bytes) at p and
// returns the index after its closing bracket.
func scanNumberList(buf []byte, p int) (end int, ok bool) {
	n := len(buf)
	if p >= n || buf[p] != '[' {
		return 0, false
	}
	p = skipSpace(buf, p+1)
	if p < n && buf[p] == ']' {
		return p + 1, true
	}
	for {
		// Byte values are small integers: read those here, anything
		// else through scanNumber.
		if p+1 < n && '1' <= buf[p] && buf[p] <= '9' && (buf[p+1] == ',' || buf[p+1] == ']') {
			p++
		} else if p+2 < n && '1' <= buf[p] && buf[p] <= '9' && isASCIIDigit(buf[p+1]) && (buf[p+2] == ',' || buf[p+2] == ']') {
			p += 2
		} else if p+3 < n && '1' <= buf[p] && buf[p] <= '9' && isASCIIDigit(buf[p+1]) && isASCIIDigit(buf[p+2]) && (buf[p+3] == ',' || buf[p+3] == ']') {
			p += 3
		} else {
			e, _, ok := scanNumber(buf, p)
			if !ok {
				return 0, false
			}
			p = skipSpace(buf, e)
		}
		if p >= n {
			return 0, false
		}
		switch buf[p] {
		case ',':
			p = skipSpace(buf, p+1)
		case ']':
			return p + 1, true
		default:
			return 0, false
		}
	}
}

// Members of a token tokenFast reads.
const (
	tokToken = 1 << iota
	tokLogprob
	tokBytes
	tokTop
)

// tokenFast decodes the generated token at d.i in the shape servers send
// it — "token" (a string without escapes, in valid UTF-8), "logprob" (a
// number), "bytes" (a list of numbers or null), "top_logprobs" (a list or
// null), each at most once, "token" before "top_logprobs" — keeping what
// token keeps. ok false says only that this path does not decide it: the
// decoder is then as it was (what it appended is dropped) and token, the
// general path, reads the token from the same place.
func (d *replyDecoder) tokenFast(prevDigit bool) (digit, ok bool) {
	buf, n := d.buf, len(d.buf)
	start, textMark, altMark, evidence := d.i, len(d.text), len(d.alts), d.evidence
	undo := func() (bool, bool) {
		d.i, d.text, d.alts, d.evidence = start, d.text[:textMark], d.alts[:altMark], evidence
		return false, false
	}
	p := skipSpace(buf, d.i)
	if p >= n || buf[p] != '{' {
		return undo()
	}
	p = skipSpace(buf, p+1)
	t := tokenRec{alts: int32(len(d.alts))}
	var seen int
	for {
		if p >= n || buf[p] != '"' {
			return undo()
		}
		var bit int
		switch {
		case hasAt(buf, p, `"token"`):
			bit, p = tokToken, p+len(`"token"`)
		case hasAt(buf, p, `"logprob"`):
			bit, p = tokLogprob, p+len(`"logprob"`)
		case hasAt(buf, p, `"bytes"`):
			bit, p = tokBytes, p+len(`"bytes"`)
		case hasAt(buf, p, `"top_logprobs"`):
			bit, p = tokTop, p+len(`"top_logprobs"`)
		default:
			return undo()
		}
		if seen&bit != 0 {
			return undo()
		}
		seen |= bit
		p = skipSpace(buf, p)
		if p >= n || buf[p] != ':' {
			return undo()
		}
		p = skipSpace(buf, p+1)
		if p >= n {
			return undo()
		}
		switch bit {
		case tokToken:
			if buf[p] != '"' {
				return undo()
			}
			k := p + 1
			for k < n && plainString[buf[k]] {
				k++
			}
			if k >= n || buf[k] != '"' || !utf8.Valid(buf[p+1:k]) {
				return undo()
			}
			raw := buf[p+1 : k]
			if len(d.text)+len(raw) > 1<<31-1 {
				return undo()
			}
			t.text = span{off: int32(len(d.text)), n: int32(len(raw))}
			d.text = append(d.text, raw...)
			digit = hasDigit(raw)
			p = k + 1
		case tokLogprob:
			e, _, ok := scanNumber(buf, p)
			if !ok {
				return undo()
			}
			f, err := strconv.ParseFloat(string(buf[p:e]), 64)
			if err != nil {
				return undo()
			}
			t.logprob, p = f, e
		case tokBytes:
			if hasAt(buf, p, "null") {
				p += 4
				break
			}
			e, ok := scanNumberList(buf, p)
			if !ok {
				return undo()
			}
			p = e
		case tokTop:
			if hasAt(buf, p, "null") {
				p += 4
				break
			}
			// The alternatives are read as token reads them: kept when
			// the token may be the score's or follows one.
			d.i = p
			if d.need == needAllTokens || prevDigit || seen&tokToken == 0 || digit {
				if seen&tokToken == 0 {
					return undo() // the general path decides before the text
				}
				if !d.array(func() bool { return d.alternative(true) }) {
					return undo()
				}
			} else if !d.skipAlternatives() {
				return undo()
			}
			p = d.i
		}
		p = skipSpace(buf, p)
		if p >= n {
			return undo()
		}
		switch buf[p] {
		case ',':
			p = skipSpace(buf, p+1)
			continue
		case '}':
			p++
		default:
			return undo()
		}
		break
	}
	t.altCount = int32(len(d.alts)) - t.alts
	d.tokens = append(d.tokens, t)
	d.i = p
	return digit, true
}

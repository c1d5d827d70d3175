package judge

import (
	"bytes"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// The fast paths for generated tokens and their alternatives.
//
// A scoring reply with 20 top_logprobs per token is ~60 KB, and all but a
// few of its token's alternative lists are only checked, never kept: a
// token that cannot be (or follow) the score's. Checking them through the
// general scanner (closures per object member, a peek per byte class) was
// most of the decoder's CPU. skipAlternativeFast and keepAlternativeFast
// read one alternative in one loop over the bytes (strings and numbers a
// word at a time, replyscan.go), and accept it only in the shape servers
// send — members "token" (a string, or null), "logprob" (a number or
// null) and "bytes" (a list of numbers, or null), each at most once, plain
// keys. Anything else — another key, a \u escape, a repeated member, an
// alternative that is score evidence — is handed, from the alternative's
// opening brace, to alternative, the general path; so what is accepted,
// refused and kept is exactly what that path decides
// (FuzzAlternativeFastPaths, FuzzSkipAlternatives, FuzzKeepAlternatives
// and FuzzTokenFast compare the two).

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

// Members of a token or an alternative the fast paths read, as bits of a
// set.
const (
	memberToken = 1 << iota
	memberLogprob
	memberBytes
	memberTop // a generated token's only
)

// The member keys as load64 reads them (TestMemberKeyWords checks them).
const (
	mask7         = 1<<56 - 1
	keyTokenWord  = '"' | 't'<<8 | 'o'<<16 | 'k'<<24 | 'e'<<32 | 'n'<<40 | '"'<<48 // `"token"`
	keyBytesWord  = '"' | 'b'<<8 | 'y'<<16 | 't'<<24 | 'e'<<32 | 's'<<40 | '"'<<48 // `"bytes"`
	keyLogprobBeg = '"' | 'l'<<8 | 'o'<<16 | 'g'<<24 | 'p'<<32 | 'r'<<40 | 'o'<<48 | 'b'<<56
	keyTopBeg     = '"' | 't'<<8 | 'o'<<16 | 'p'<<24 | '_'<<32 | 'l'<<40 | 'o'<<48 | 'g'<<56
)

// memberKey reads the key at p (its opening quote) when it is one the fast
// paths know, spelled plainly, returning its bit and the index after its
// closing quote; bit 0 for any other key.
func memberKey(buf []byte, p int) (bit, end int) {
	if p+8 > len(buf) {
		return 0, p
	}
	x := load64(buf, p)
	switch {
	case x&mask7 == keyTokenWord:
		return memberToken, p + len(`"token"`)
	case x&mask7 == keyBytesWord:
		return memberBytes, p + len(`"bytes"`)
	case x == keyLogprobBeg && p+8 < len(buf) && buf[p+8] == '"':
		return memberLogprob, p + len(`"logprob"`)
	case x == keyTopBeg && hasAt(buf, p+8, `probs"`):
		return memberTop, p + len(`"top_logprobs"`)
	}
	return 0, p
}

// afterColon passes over the colon after a key at p and the whitespace
// around it, returning the index of the value; false when there is no
// colon or nothing after it.
func afterColon(buf []byte, p int) (int, bool) {
	if p < len(buf) && buf[p] != ':' {
		p = skipSpace(buf, p)
	}
	if p >= len(buf) || buf[p] != ':' {
		return 0, false
	}
	p++
	if p < len(buf) && buf[p] <= ' ' {
		p = skipSpace(buf, p)
	}
	return p, p < len(buf)
}

// afterMember passes over what follows a member's value at p: a comma
// (more is true, the index is the next key's) or the object's closing
// brace (the index is after it). ok false for anything else.
func afterMember(buf []byte, p int) (next int, more, ok bool) {
	if p < len(buf) && buf[p] <= ' ' {
		p = skipSpace(buf, p)
	}
	if p >= len(buf) {
		return 0, false, false
	}
	switch buf[p] {
	case ',':
		p++
		if p < len(buf) && buf[p] <= ' ' {
			p = skipSpace(buf, p)
		}
		return p, true, true
	case '}':
		return p + 1, false, true
	}
	return 0, false, false
}

// alternatives reads a top_logprobs list, keeping its alternatives or only
// checking them, as token decides.
func (d *replyDecoder) alternatives(keep bool) bool {
	buf := d.buf
	p := skipSpace(buf, d.i)
	if d.slowSkip || p >= len(buf) || buf[p] != '[' {
		d.i = p
		return d.array(func() bool { return d.alternative(keep) })
	}
	p = skipSpace(buf, p+1)
	if p < len(buf) && buf[p] == ']' {
		d.i = p + 1
		return true
	}
	for {
		var end int
		var ok bool
		if keep {
			end, ok = d.keepAlternativeFast(p)
		} else if end, ok = skipAlternativeAsSent(buf, p); !ok {
			end, ok = d.skipAlternativeMembers(p)
		}
		if ok {
			p = end
		} else {
			d.i = p
			if !d.alternative(keep) {
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

// shortEscapes reports whether the escaped body of a string decodes
// exactly as unescape decodes it and holds no \u escape. Such a body has
// two adjacent digits exactly when its decoded text does: each short
// escape is two bytes that are not digits standing for one that is not a
// digit. A \u escape may stand for a digit (and its hex digits are
// digits), and escaped invalid UTF-8 is the reference decoder's to
// decide: both go to the general path. (A `\\u`, an escaped backslash
// before a u, goes there too, needlessly but correctly.)
func shortEscapes(raw []byte) bool {
	return !bytes.Contains(raw, []byte(`\u`)) && utf8.Valid(raw)
}

// skipAlternativeFast passes over the alternative object starting at p,
// returning the index after its closing brace. ok false says only that
// this path does not decide it (the general one must), not that it is
// malformed.
func (d *replyDecoder) skipAlternativeFast(p int) (end int, ok bool) {
	if end, ok := skipAlternativeAsSent(d.buf, p); ok {
		return end, true
	}
	return d.skipAlternativeMembers(p)
}

// skipAlternativeMembers is skipAlternativeFast for an alternative in any
// form: its members in any order, with any whitespace.
func (d *replyDecoder) skipAlternativeMembers(p int) (end int, ok bool) {
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
		bit, q := memberKey(buf, p)
		if bit == 0 || bit == memberTop || seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		if p, ok = afterColon(buf, q); !ok {
			return 0, false
		}
		switch {
		case buf[p] == 'n':
			if !hasAt(buf, p, "null") {
				return 0, false
			}
			p += 4
		case bit == memberToken:
			if buf[p] != '"' {
				return 0, false
			}
			e, escaped, ok := stringEnd(buf, p+1)
			if !ok {
				return 0, false
			}
			raw := buf[p+1 : e]
			if escaped && !shortEscapes(raw) {
				return 0, false
			}
			// Score evidence in a skipped list: the general path
			// decides whether it is the one kept. (Unescaped invalid
			// UTF-8 decodes to U+FFFD, never a digit.)
			if adjacentDigits(raw) {
				return 0, false
			}
			p = e + 1
		case bit == memberLogprob:
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
		default: // memberBytes
			e, ok := scanNumberList(buf, p)
			if !ok {
				return 0, false
			}
			p = e
		}
		next, more, ok := afterMember(buf, p)
		if !ok {
			return 0, false
		}
		if !more {
			return next, true
		}
		p = next
	}
}

// The start of an alternative as servers send it, as load64 reads it.
const altStartWord = '{' | '"'<<8 | 't'<<16 | 'o'<<24 | 'k'<<32 | 'e'<<40 | 'n'<<48 | '"'<<56 // `{"token"`

// skipAlternativeAsSent passes over the alternative at p when it is
// exactly in the form servers send: its members in the order "token",
// "logprob", "bytes" (or without "bytes"), each colon and comma followed
// by at most one space, the text without escapes and without adjacent
// digits, the logprob without an exponent, the bytes a compact list. It
// is skipAlternativeFast's member loop unrolled for that form, with the
// text's end and digits found in one word when it is shorter than eight
// bytes; any other form is the loop's. ok false says only that this path
// does not decide.
func skipAlternativeAsSent(buf []byte, p int) (end int, ok bool) {
	n := len(buf)
	if p+16 > n || load64(buf, p) != altStartWord || buf[p+8] != ':' {
		return 0, false
	}
	p += 9
	if buf[p] == ' ' {
		p++
	}
	if buf[p] != '"' {
		return 0, false
	}
	p++
	if p+8 > n {
		return 0, false
	}
	text := p
	x := load64(buf, p)
	if stops := stringStops(x); stops != 0 {
		k := bits.TrailingZeros64(stops) >> 3
		if buf[p+k] != '"' {
			return 0, false
		}
		// The digits before the quote; two adjacent ones are evidence.
		digits := digitBytes(x) & (stops&-stops - 1)
		if digits&(digits<<8) != 0 {
			return 0, false
		}
		p += k + 1
	} else {
		e, escaped, ok := stringEnd(buf, p+8)
		if !ok || escaped || adjacentDigits(buf[p:e]) {
			return 0, false
		}
		p = e + 1
	}
	raw := buf[text : p-1]
	if p+12 > n || buf[p] != ',' {
		return 0, false
	}
	p++
	if buf[p] == ' ' {
		p++
	}
	if load64(buf, p) != keyLogprobBeg || buf[p+8] != '"' || buf[p+9] != ':' {
		return 0, false
	}
	p += 10
	if p < n && buf[p] == ' ' {
		p++
	}
	// A logprob is a negative number with a one- or two-digit integer
	// part and a fraction of up to 15 digits: its digits are counted here,
	// the fraction's in two words loaded at once (as digitsEnd does, not
	// called: a call spills every live register). Any other number goes
	// through scanNumber.
	e := -1
	if p+20 <= n && buf[p] == '-' && isASCIIDigit(buf[p+1]) {
		q := p + 2
		if buf[p+1] != '0' && isASCIIDigit(buf[q]) {
			q++
		}
		if buf[q] == '.' {
			q++
			k1, k2 := leadingDigits(load64(buf, q)), leadingDigits(load64(buf, q+8))
			switch {
			case k1 == 0:
				return 0, false // no digit after the point
			case k1 < 8:
				e = q + k1
			case k2 < 8:
				e = q + 8 + k2
			}
		}
	}
	if e >= 0 {
		p = e
	} else if e, exp, ok := scanNumber(buf, p); ok && !exp {
		p = e
	} else {
		return 0, false // an exponent: the member loop checks its range
	}
	if p >= n || buf[p] == 'e' || buf[p] == 'E' {
		return 0, false
	}
	if buf[p] == '}' {
		return p + 1, true
	}
	if p+12 > n || buf[p] != ',' {
		return 0, false
	}
	p++
	if buf[p] == ' ' {
		p++
	}
	if load64(buf, p)&mask7 != keyBytesWord || buf[p+7] != ':' {
		return 0, false
	}
	p += 8
	if buf[p] == ' ' {
		p++
	}
	if buf[p] != '[' {
		return 0, false
	}
	// Servers list the text's own bytes. When the list is exactly those,
	// as encoding/json writes them, it is a valid list: comparing is
	// cheaper than checking.
	if end, ok := sameByteList(buf, p, raw); ok {
		p = end
	} else if p, ok = compactIntList(buf, p+1); !ok {
		return 0, false
	}
	if p >= n || buf[p] != '}' {
		return 0, false
	}
	return p + 1, true
}

// byteElems[c] is c in decimal followed by a comma (as load64 reads it,
// the first byte lowest), the mask of its bytes, and its length.
var byteElems = func() (t [256]struct {
	word, mask uint64
	n          int
}) {
	for c := range t {
		s := strconv.Itoa(c) + ","
		for i := range len(s) {
			t[c].word |= uint64(s[i]) << (8 * i)
		}
		t[c].mask = 1<<(8*len(s)) - 1
		t[c].n = len(s)
	}
	return t
}()

// sameByteList reports whether the list at p (its '[') is text's bytes
// in decimal, comma-separated without spaces, and returns the index after
// its ']'. false says only that it is not that list.
func sameByteList(buf []byte, p int, text []byte) (end int, ok bool) {
	q := p + 1
	// Elements are at most four bytes: every word below is in buf.
	if len(text) == 0 || len(buf)-q < 4*len(text)+8 || buf[p] != '[' {
		return 0, false
	}
	last := len(text) - 1
	for _, c := range text[:last] {
		e := &byteElems[c]
		if (load64(buf, q)^e.word)&e.mask != 0 {
			return 0, false
		}
		q += e.n
	}
	// The last element ends with the ']' in its comma's place.
	e := &byteElems[text[last]]
	if (load64(buf, q)^e.word^(','^']')<<(8*e.n-8))&e.mask != 0 {
		return 0, false
	}
	return q + e.n, true
}

// keepAlternativeFast decodes the alternative object starting at p as
// alternative(true) does, appending it to d.alts, and returns the index
// after its closing brace. ok false says only that this path does not
// decide it; the decoder is then as it was.
func (d *replyDecoder) keepAlternativeFast(p int) (end int, ok bool) {
	buf := d.buf
	n := len(buf)
	if p >= n || buf[p] != '{' {
		return 0, false
	}
	textMark := len(d.text)
	p = skipSpace(buf, p+1)
	var a altRec
	if p < n && buf[p] == '}' {
		d.alts = append(d.alts, a)
		return p + 1, true
	}
	var seen int
	for {
		bit, q := memberKey(buf, p)
		if bit == 0 || bit == memberTop || seen&bit != 0 {
			break
		}
		seen |= bit
		if p, ok = afterColon(buf, q); !ok {
			break
		}
		switch {
		case buf[p] == 'n':
			if !hasAt(buf, p, "null") {
				return d.dropText(textMark)
			}
			p += 4
		case bit == memberToken:
			if p, ok = d.appendString(p, &a.text); !ok {
				return d.dropText(textMark)
			}
		case bit == memberLogprob:
			e, _, ok := scanNumber(buf, p)
			if !ok {
				return d.dropText(textMark)
			}
			f, err := strconv.ParseFloat(string(buf[p:e]), 64)
			if err != nil {
				return d.dropText(textMark)
			}
			a.logprob, p = f, e
		default: // memberBytes
			e, ok := scanNumberList(buf, p)
			if !ok {
				return d.dropText(textMark)
			}
			p = e
		}
		next, more, ok := afterMember(buf, p)
		if !ok {
			break
		}
		if !more {
			d.alts = append(d.alts, a)
			return next, true
		}
		p = next
	}
	return d.dropText(textMark)
}

// dropText undoes what a fast path appended to d.text and reports that it
// does not decide.
func (d *replyDecoder) dropText(mark int) (int, bool) {
	d.text = d.text[:mark]
	return 0, false
}

// appendString decodes the string at p (its opening quote) onto d.text as
// stringField does, returning the index after it.
func (d *replyDecoder) appendString(p int, s *span) (int, bool) {
	buf := d.buf
	if p >= len(buf) || buf[p] != '"' {
		return 0, false
	}
	e, escaped, ok := stringEnd(buf, p+1)
	if !ok {
		return 0, false
	}
	raw := buf[p+1 : e]
	off := len(d.text)
	if !escaped && utf8.Valid(raw) {
		d.text = append(d.text, raw...)
	} else if d.text, ok = unescape(d.text, raw); !ok {
		return 0, false
	}
	if len(d.text) > 1<<31-1 {
		return 0, false
	}
	*s = span{off: int32(off), n: int32(len(d.text) - off)}
	return e + 1, true
}

// hasAt reports whether buf holds lit at p.
func hasAt(buf []byte, p int, lit string) bool {
	return len(buf)-p >= len(lit) && string(buf[p:p+len(lit)]) == lit
}

// tokenFast decodes the generated token at d.i in the shape servers send
// it — "token" (a string), "logprob" (a number), "bytes" (a list of
// numbers or null), "top_logprobs" (a list or null), each at most once,
// "token" before "top_logprobs" — keeping what token keeps. ok false says
// only that this path does not decide it: the decoder is then as it was
// (what it appended is dropped) and token, the general path, reads the
// token from the same place.
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
		bit, q := memberKey(buf, p)
		if bit == 0 || seen&bit != 0 {
			return undo()
		}
		seen |= bit
		if p, ok = afterColon(buf, q); !ok {
			return undo()
		}
		switch bit {
		case memberToken:
			if p, ok = d.appendString(p, &t.text); !ok {
				return undo()
			}
			digit = hasDigit(d.text[t.text.off : t.text.off+t.text.n])
		case memberLogprob:
			e, _, ok := scanNumber(buf, p)
			if !ok {
				return undo()
			}
			f, err := strconv.ParseFloat(string(buf[p:e]), 64)
			if err != nil {
				return undo()
			}
			t.logprob, p = f, e
		case memberBytes:
			if hasAt(buf, p, "null") {
				p += 4
				break
			}
			e, ok := scanNumberList(buf, p)
			if !ok {
				return undo()
			}
			p = e
		case memberTop:
			if hasAt(buf, p, "null") {
				p += 4
				break
			}
			if seen&memberToken == 0 {
				return undo() // the general path decides before the text
			}
			// The alternatives are read as token reads them: kept when
			// the token may be the score's or follows one.
			d.i = p
			if !d.alternatives(d.need == needAllTokens || prevDigit || digit) {
				return undo()
			}
			p = d.i
		}
		next, more, ok := afterMember(buf, p)
		if !ok {
			return undo()
		}
		p = next
		if !more {
			break
		}
	}
	t.altCount = int32(len(d.alts)) - t.alts
	d.tokens = append(d.tokens, t)
	d.i = p
	return digit, true
}

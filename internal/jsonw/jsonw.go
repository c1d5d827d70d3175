// Package jsonw appends JSON values byte for byte as encoding/json's
// Marshal writes them, for the encoders on hot paths — the Go guest's
// result, the host's results lines — that write a known shape by hand
// instead of through reflection.
//
// The invariant is equality with encoding/json, not merely valid JSON:
// results.jsonl, cache keys and guest replies are compared byte for byte
// with what encoding/json made of the same values before, so every
// function here is fuzzed against it (jsonw_test.go). Strings are
// HTML-safe as Marshal writes them ('<', '>' and '&' escaped, invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped). It imports only the
// standard library and builds for every target, Wasm guests included.
package jsonw

import (
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// Finite reports whether encoding/json can encode f: it refuses NaN and
// the infinities.
func Finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// AppendFloat appends f as encoding/json writes a float64. f must be
// finite (see Finite); encoding/json fails on the others.
func AppendFloat(b []byte, f float64) []byte {
	// A binary metric's score and its default threshold, without strconv's
	// dozen calls (each a termination check in a Wasm guest). -0 is not 0
	// here: encoding/json writes it "-0".
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0 && !math.Signbit(f):
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendInt appends n as encoding/json writes an int.
func AppendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// AppendBool appends v as encoding/json writes a bool.
func AppendBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

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

// AppendString appends s quoted as json.Marshal writes a string.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendStringBody(dst, s)
	return append(dst, '"')
}

// AppendStringBody appends s escaped as json.Marshal escapes a string,
// without the quotes. Escaping is per rune and a rune never spans an
// ASCII byte, so the body of a+b is the body of a then that of b whenever b
// begins with an ASCII byte (the judge's request body relies on it).
func AppendStringBody(dst []byte, s string) []byte { return appendBody(dst, s, true) }

// AppendStringNoHTML appends s quoted as a json.Encoder with
// SetEscapeHTML(false) writes a string: '<', '>' and '&' as they are,
// everything else as AppendString writes it.
func AppendStringNoHTML(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendBody(dst, s, false)
	return append(dst, '"')
}

func appendBody(dst []byte, s string, html bool) []byte {
	start := 0
	for i := 0; ; {
		if i = plainEnd(s, i); i >= len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if !html && (b == '<' || b == '>' || b == '&') {
				i++ // plainEnd stops at them; without HTML escaping they are plain
				continue
			}
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

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// zeroBytes sets the high bit of the lowest zero byte of x. Bytes above it
// may be marked too (the subtraction borrows through it), never bytes
// below it: only the lowest mark is meaningful.
func zeroBytes(x uint64) uint64 { return (x - ones) & ^x & highs }

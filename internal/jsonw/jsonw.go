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

// AppendString appends s quoted as encoding/json writes a string.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	// Bytes before slow are taken one at a time: a window that was not
	// plain is walked to its end before a whole word is tested again,
	// rather than re-tested at every byte up to the one that needs care.
	slow := 0
	for i := 0; i < len(s); {
		if i >= slow {
			if i+8 <= len(s) && PlainWord(le64(s[i:i+8])) {
				i += 8
				continue
			}
			slow = i + 8
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// PlainWord reports whether 8 bytes, read little-endian into x, are ASCII
// that encoding/json writes as they are in a string (none < 0x20, '"',
// '\\', '<', '>', '&').
func PlainWord(x uint64) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	special := x&highs | (x-ones*0x20)&^x&highs |
		hasByte(x, '"') | hasByte(x, '\\') | hasByte(x, '<') | hasByte(x, '>') | hasByte(x, '&')
	return special == 0
}

// hasByte is non-zero when an ASCII byte of x is c.
func hasByte(x uint64, c byte) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	y := x ^ (ones * uint64(c))
	return (y - ones) &^ y & highs
}

// le64 reads 8 bytes of s as a little-endian word.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

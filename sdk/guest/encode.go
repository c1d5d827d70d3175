package guest

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agentanvil/anvil/abi"
)

// encodeMeasureResult writes r exactly as json.Marshal does (byte for
// byte; FuzzEncodeMeasureResult holds it to that), skipping plain runs of
// text 8 bytes per loop turn. Marshalling a small result with
// encoding/json cost a Go guest ≈ 0.13 ms under wazero's termination
// checks (see decodeMeasureRequest). What it does not write itself — an
// error, details that are not compact JSON free of what encoding/json
// escapes, a NaN or infinite number — it leaves to json.Marshal.
func encodeMeasureResult(r *abi.MeasureResult) ([]byte, error) {
	if r == nil || r.Error != nil || !plainDetails(r.Details) ||
		!finite(r.Threshold) || (r.Score != nil && !finite(*r.Score)) {
		return json.Marshal(r)
	}
	b := make([]byte, 0, 64+len(r.Reason)+len(r.ScoreMode)+len(r.Details))
	b = append(b, '{')
	if r.Score != nil {
		b = append(b, `"score":`...)
		b = appendFloat(b, *r.Score)
		b = append(b, ',')
	}
	b = append(b, `"success":`...)
	b = strconv.AppendBool(b, r.Success)
	b = append(b, `,"threshold":`...)
	b = appendFloat(b, r.Threshold)
	if r.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, r.Reason)
	}
	if r.ScoreMode != "" {
		b = append(b, `,"score_mode":`...)
		b = appendString(b, r.ScoreMode)
	}
	if len(r.Details) > 0 {
		b = append(b, `,"details":`...)
		b = append(b, r.Details...)
	}
	return append(b, '}'), nil
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// appendFloat formats f as encoding/json does a float64.
func appendFloat(b []byte, f float64) []byte {
	// A binary metric's score and its default threshold, without strconv's
	// dozen calls (each a termination check in a guest). -0 is not 0 here:
	// encoding/json writes it "-0".
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

// plainDetails: details json.Marshal would copy unchanged — valid JSON
// with no space outside or inside strings and nothing it escapes ('<',
// '>', '&', U+2028/U+2029, whose encoding starts with 0xE2). Conservative:
// a space inside a string also sends the result to json.Marshal.
func plainDetails(d json.RawMessage) bool {
	if len(d) == 0 {
		return true
	}
	for _, c := range d {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	v := fastDecoder{b: d}
	return !v.peek('n') && v.skip(0) && v.i == len(d)
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does (HTML-safe: '<', '>' and
// '&' escaped; invalid UTF-8 as \ufffd; U+2028 and U+2029 escaped).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	// Bytes before slow are taken one at a time: a window that was not
	// plain is walked to its end before a whole word is tested again,
	// rather than re-tested at every byte up to the one that needs care.
	slow := 0
	for i := 0; i < len(s); {
		if i >= slow {
			if i+8 <= len(s) && plainWord(le64(s[i:i+8])) {
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

// plainWord: 8 ASCII bytes that encoding/json writes as they are (none
// < 0x20, '"', '\\', '<', '>', '&').
func plainWord(x uint64) bool {
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

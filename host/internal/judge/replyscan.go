package judge

import (
	"encoding/binary"
	"math/bits"
)

// Word-at-a-time scanning of JSON strings and numbers.
//
// A scoring reply is mostly short strings, numbers and lists of small
// numbers; looking at it a byte at a time (a table lookup and a branch per
// byte) was most of the decoder's CPU. The helpers below look at eight
// bytes at once (SWAR: bit tricks on a uint64 loaded little-endian, so
// the first byte in the buffer is the lowest in the word) and fall back to
// a byte loop only for the last few bytes of the buffer. Each has a
// byte-at-a-time reference in the tests that a fuzz target compares it
// with (FuzzStringEnd, FuzzScanNumber, FuzzScanNumberList).

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
	lows7 = 0x7f7f7f7f7f7f7f7f // ^highs
)

// load64 reads the eight bytes at p, the first one lowest; the caller
// checks that p+8 <= len(buf).
func load64(buf []byte, p int) uint64 { return binary.LittleEndian.Uint64(buf[p:]) }

// zeroBytes sets the high bit of the lowest zero byte of x. Bytes above it
// may be marked too (the subtraction borrows through it), never bytes
// below it: only the lowest mark is meaningful.
func zeroBytes(x uint64) uint64 { return (x - ones) & ^x & highs }

// stringStops marks (as zeroBytes does) the lowest byte of x that ends a
// run of plain string bytes: a quote, a backslash or a control character.
// A byte below 0x20 is the only one whose subtraction borrows, so the
// lowest mark is again exact.
func stringStops(x uint64) uint64 {
	return zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')) | (x-ones*0x20)&^x&highs
}

// leadingDigits counts the ASCII digits x begins with (8 when all are).
// x^'0' maps exactly the digits to 0–9; a byte is not a digit when that
// value is 10 or more, which adding 0x76 to its low seven bits (no carry
// between bytes) or its own high bit shows.
func leadingDigits(x uint64) int {
	t := x ^ (ones * '0')
	notDigit := ((t &^ highs) + ones*0x76 | t) & highs
	return bits.TrailingZeros64(notDigit) >> 3
}

// digitsEnd returns the index of the first byte at or after p that is not
// an ASCII digit.
func digitsEnd(buf []byte, p int) int {
	// A logprob's fraction is 13 to 17 digits: two words, loaded at once.
	if p+16 <= len(buf) {
		k1, k2 := leadingDigits(load64(buf, p)), leadingDigits(load64(buf, p+8))
		if k1 < 8 {
			return p + k1
		}
		if k2 < 8 {
			return p + 8 + k2
		}
		p += 16
	}
	for p+8 <= len(buf) {
		k := leadingDigits(load64(buf, p))
		p += k
		if k < 8 {
			return p
		}
	}
	for p < len(buf) && isASCIIDigit(buf[p]) {
		p++
	}
	return p
}

// stringEnd checks the body of the JSON string that begins at k (just
// after its opening quote) as encoding/json's scanner does, and returns
// the index of its closing quote; escaped says the body holds a backslash.
// ok is false for an unterminated string, a control character or a
// malformed escape.
func stringEnd(buf []byte, k int) (end int, escaped, ok bool) {
	for k < len(buf) {
		if k+8 <= len(buf) {
			m := stringStops(load64(buf, k))
			if m == 0 {
				k += 8
				continue
			}
			k += bits.TrailingZeros64(m) >> 3
		} else if plainString[buf[k]] {
			k++
			continue
		}
		switch c := buf[k]; {
		case c == '"':
			return k, escaped, true
		case c == '\\':
			escaped = true
			if k+1 >= len(buf) {
				return 0, false, false
			}
			switch buf[k+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				k += 2
			case 'u':
				if k+6 > len(buf) {
					return 0, false, false
				}
				for _, h := range buf[k+2 : k+6] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				k += 6
			default:
				return 0, false, false
			}
		default: // a control character
			return 0, false, false
		}
	}
	return 0, false, false
}

// scanNumber checks the JSON number at p and returns the index after it;
// exp says it has an exponent.
func scanNumber(buf []byte, p int) (end int, exp, ok bool) {
	n := len(buf)
	if p < n && buf[p] == '-' {
		p++
	}
	if p >= n {
		return 0, false, false
	}
	switch c := buf[p]; {
	case c == '0':
		p++
	case '1' <= c && c <= '9':
		// A logprob's integer part is one or two digits: no word for
		// them.
		p++
		if p < n && isASCIIDigit(buf[p]) {
			p++
			if p < n && isASCIIDigit(buf[p]) {
				p = digitsEnd(buf, p+1)
			}
		}
	default:
		return 0, false, false
	}
	if p < n && buf[p] == '.' {
		q := digitsEnd(buf, p+1)
		if q == p+1 {
			return 0, false, false
		}
		p = q
	}
	if p < n && (buf[p] == 'e' || buf[p] == 'E') {
		exp = true
		p++
		if p < n && (buf[p] == '+' || buf[p] == '-') {
			p++
		}
		q := digitsEnd(buf, p)
		if q == p {
			return 0, false, false
		}
		p = q
	}
	return p, exp, true
}

// nonZeroBytes sets the high bit of every byte of x that is not zero,
// exactly: the low seven bits plus 0x7f carry into the high bit, never
// into the next byte.
func nonZeroBytes(x uint64) uint64 { return ((x &^ highs) + lows7 | x) & highs }

// digitBytes sets the high bit of every ASCII digit in x, exactly (see
// leadingDigits).
func digitBytes(x uint64) uint64 {
	t := x ^ (ones * '0')
	return ((t&^highs)+ones*0x76|t)&highs ^ highs
}

// scanNumberList checks a list of numbers (a token's UTF-8 bytes) at p and
// returns the index after its closing bracket.
func scanNumberList(buf []byte, p int) (end int, ok bool) {
	if p >= len(buf) || buf[p] != '[' {
		return 0, false
	}
	if end, ok := compactIntList(buf, p+1); ok {
		return end, true
	}
	return numberList(buf, p+1)
}

// compactIntList checks, a word at a time, a list of unsigned integers
// written without spaces ("[32,97,108]" as servers send a token's bytes)
// whose '[' is just before p, returning the index after its ']'. ok false
// says only that the list is not in that form (the general loop reads
// it), never that it is malformed.
//
// In such a list every byte up to the ']' is a digit or a comma, every
// comma and the ']' follow a digit, and a number that begins with 0 is
// only that 0. Each word's bytes are classified at once as bit masks
// (digitBytes, nonZeroBytes) and the three rules checked with shifts: a
// byte's predecessor is the mask shifted up a byte, with the previous
// word's last byte carried into the first.
func compactIntList(buf []byte, p int) (end int, ok bool) {
	var prevDigit uint64    // 0x80: the byte before p is a digit
	prevSep := uint64(0x80) // 0x80: the byte before p is '[' or ','
	var zeroStart uint64    // 0x80: the byte before p is a 0 that begins a number
	for p+8 <= len(buf) {
		x := load64(buf, p)
		// As leadingDigits and nonZeroBytes do, sharing their sums: t's
		// zero bytes are the 0s.
		t := x ^ (ones * '0')
		low := t&^highs + lows7
		notDigit := (low - ones*9 | t) & highs // t&^highs + 0x76: no borrow, low is at least 0x7f
		notZero := (low | t) & highs
		notComma := nonZeroBytes(x ^ (ones * ','))
		digits, commas := notDigit^highs, notComma^highs
		afterDigit := digits<<8 | prevDigit
		starts := (commas<<8 | prevSep) &^ notZero // the 0s that begin a number
		bad := commas &^ afterDigit                // a comma not after a digit
		bad |= (starts<<8 | zeroStart) & digits    // a digit after a leading 0
		// A byte that is neither ends the list, if it is a ']' after a
		// digit; only the bytes before it are the list's.
		if other := notDigit & notComma; other != 0 {
			k := bits.TrailingZeros64(other) >> 3
			if bad&(other&-other-1) == 0 && buf[p+k] == ']' && afterDigit>>(8*k)&0x80 != 0 {
				return p + k + 1, true
			}
			return 0, false
		}
		if bad != 0 {
			return 0, false
		}
		prevDigit, prevSep, zeroStart = digits>>56, commas>>56, starts>>56
		p += 8
	}
	return 0, false
}

// numberList checks the list of numbers whose '[' is just before p, an
// element at a time, and returns the index after its closing bracket.
func numberList(buf []byte, p int) (end int, ok bool) {
	n := len(buf)
	p = skipSpace(buf, p)
	if p < n && buf[p] == ']' {
		return p + 1, true
	}
	for {
		e, _, ok := scanNumber(buf, p)
		if !ok {
			return 0, false
		}
		p = skipSpace(buf, e)
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

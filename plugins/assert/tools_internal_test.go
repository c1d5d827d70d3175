package assert

import (
	"math/big"
	"testing"
)

// FuzzCanonicalNumber: two JSON numbers have the same canonical form
// exactly when their decimal values are equal (big.Rat, for exponents
// small enough for it to be quick).
func FuzzCanonicalNumber(f *testing.F) {
	for _, p := range [][2]string{{"1", "1.0"}, {"10e-1", "1"}, {"-0", "0.0"}, {"1.50", "15e-1"}, {"9007199254740993", "9007199254740992"}, {"0.1", "1e-1"}, {"100", "1e2"}, {"1E+2", "100"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ra, oka := new(big.Rat).SetString(a)
		rb, okb := new(big.Rat).SetString(b)
		if !oka || !okb || !isJSONNumber(a) || !isJSONNumber(b) || len(a) > 40 || len(b) > 40 {
			return
		}
		if got, want := canonicalNumber(a) == canonicalNumber(b), ra.Cmp(rb) == 0; got != want {
			t.Fatalf("%s = %s: canonical forms say %v (%q, %q), values say %v", a, b, got, canonicalNumber(a), canonicalNumber(b), want)
		}
	})
}

// isJSONNumber: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, the only
// numbers the decoder hands canonicalNumber.
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// Package textmatch is the text logic the deterministic kinds share: the
// first-party assertion kinds (plugins/assert) and the textcheck example's
// metric and DAG code nodes (examples/plugins/textcheck). It holds pure
// functions of their inputs — substring search, RE2 patterns, equality with
// the first difference, JSON validity, Levenshtein distance — and no kind.
//
// Invariants: nothing here allocates or runs in proportion to more than
// its inputs, and the costly operations are bounded: a pattern is at most
// MaxPatternBytes, the Levenshtein table at most MaxLevenshteinCells
// (past it an error, never a slow answer). Offsets and lengths are
// counted in characters (runes) where a reader sees them, and invalid
// UTF-8 counts one character per bad byte, as Go's range loop does. The
// package is linked into Wasm guests, so it uses only the standard
// library (encoding/json, which every guest links through package abi,
// not a second JSON package).
package textmatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Contains reports whether needle occurs in hay; with fold, both are
// lower-cased first (Unicode simple lower case, as strings.ToLower).
func Contains(hay, needle string, fold bool) bool {
	if fold {
		hay, needle = strings.ToLower(hay), strings.ToLower(needle)
	}
	return strings.Contains(hay, needle)
}

// HasPrefix reports whether s starts with prefix; with fold, compared
// lower-cased.
func HasPrefix(s, prefix string, fold bool) bool {
	if fold {
		s, prefix = strings.ToLower(s), strings.ToLower(prefix)
	}
	return strings.HasPrefix(s, prefix)
}

// Partition splits needles into those that occur in hay and those that do
// not, each in the order given; with fold, the search is case-insensitive.
// hay is lower-cased once, not once per needle.
func Partition(hay string, needles []string, fold bool) (found, missing []string) {
	if fold {
		hay = strings.ToLower(hay)
	}
	for _, n := range needles {
		needle := n
		if fold {
			needle = strings.ToLower(needle)
		}
		if strings.Contains(hay, needle) {
			found = append(found, n)
		} else {
			missing = append(missing, n)
		}
	}
	return found, missing
}

// Equal reports whether a and b are equal; with fold, under Unicode simple
// case folding (strings.EqualFold).
func Equal(a, b string, fold bool) bool {
	if fold {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// MaxPatternBytes bounds a regular expression's source. RE2 matching is
// linear in the input whatever the pattern, but compiling is not free and
// a pattern is config, written by a person: 4 KiB is far past any pattern
// written by hand.
const MaxPatternBytes = 4096

// CompilePattern compiles an RE2 pattern (Go's regexp syntax: no
// backreferences or lookaround, linear-time matching). The error says
// what is wrong in the pattern, for an invalid_config naming the field.
func CompilePattern(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, errors.New("is empty (it would match every text)")
	}
	if len(pattern) > MaxPatternBytes {
		return nil, fmt.Errorf("is %d bytes, over the limit of %d", len(pattern), MaxPatternBytes)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		// regexp's message starts "error parsing regexp: "; the caller
		// names the field, so only the cause stays.
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, fmt.Errorf("is not a valid RE2 pattern (Go regexp syntax; no backreferences or lookaround): %s", msg)
	}
	return re, nil
}

// FirstDifference is the index, in characters (runes), of the first
// position where a and b differ; with fold, characters equal under simple
// case folding are not a difference. When one is a prefix of the other it
// is the shorter's length.
func FirstDifference(a, b string, fold bool) int {
	i := 0
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb && !(fold && strings.EqualFold(string(ra), string(rb))) {
			return i
		}
		a, b = a[na:], b[nb:]
		i++
	}
	return i
}

// Excerpt quotes up to 20 characters of s starting at character at (as
// fmt's %q, then "…" when s goes on), or says "end of text" when s ends
// there.
func Excerpt(s string, at int) string {
	// Rune by rune up to what is quoted, not the whole text: as
	// string([]rune(s)[at:at+20]) would give, invalid bytes as U+FFFD.
	i := 0
	for n := 0; n < at && i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return "end of text"
	}
	var quoted []byte
	for n := 0; n < 20 && i < len(s); n++ {
		r, size := utf8.DecodeRuneInString(s[i:])
		quoted = utf8.AppendRune(quoted, r)
		i += size
	}
	suffix := ""
	if i < len(s) {
		suffix = "…"
	}
	return Quote(quoted) + suffix
}

// Quote is fmt's %q of b (strconv.Quote): as is between quotes when every
// byte is printable ASCII other than '"' and '\\', which is the common
// case, strconv.Quote otherwise. A Wasm guest pays for fmt's format
// scanning and reflection per byte, so hot reasons avoid it.
func Quote(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strconv.Quote(string(b))
		}
	}
	return `"` + string(b) + `"`
}

// Clip shortens s to n characters, marking the cut with "…".
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// JSONCheck is the outcome of CheckJSON.
type JSONCheck struct {
	OK     bool
	Reason string
	// Details are what a kind reports: error and offset (a syntax error),
	// or missing_keys; nil when OK.
	Details map[string]any
}

// CheckJSON reports whether text is JSON and, when keys are given, an
// object with all of them. field names the text in the reason.
func CheckJSON(text, field string, keys []string) JSONCheck {
	if !json.Valid([]byte(text)) {
		var v any
		err := json.Unmarshal([]byte(text), &v)
		msg := "invalid JSON"
		if err != nil {
			msg = err.Error()
		}
		d := map[string]any{"error": msg}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			d["offset"] = se.Offset
		}
		return JSONCheck{Reason: fmt.Sprintf("%s is not valid JSON: %s", field, msg), Details: d}
	}
	if len(keys) == 0 {
		return JSONCheck{OK: true, Reason: field + " is valid JSON"}
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return JSONCheck{Reason: fmt.Sprintf("%s is valid JSON but not an object, so it cannot have keys %q", field, keys),
			Details: map[string]any{"missing_keys": keys}}
	}
	var missing []string
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return JSONCheck{Reason: fmt.Sprintf("%s is a JSON object without keys %q", field, missing),
			Details: map[string]any{"missing_keys": missing}}
	}
	return JSONCheck{OK: true, Reason: fmt.Sprintf("%s is a JSON object with keys %q", field, keys)}
}

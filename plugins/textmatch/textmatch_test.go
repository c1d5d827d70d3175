package textmatch

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLevenshtein: distances worked out by hand (the edits are named), and
// the similarity 1 − d/max(len) from them.
func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d, n int
		sim  float64
	}{
		{"", "", 0, 0, 1},
		{"abc", "", 3, 3, 0},                 // delete a, b, c
		{"", "abc", 3, 3, 0},                 // insert a, b, c
		{"kitten", "sitting", 3, 7, 4.0 / 7}, // k→s, e→i, insert g
		{"flaw", "lawn", 2, 4, 0.5},          // delete f, insert n
		{"Paris", "Paris", 0, 5, 1},
		{"Paris", "paris", 1, 5, 0.8}, // P→p: case counts
		{"café", "cafe", 1, 4, 0.75},  // é→e: one character, two bytes
		{"naïve", "naive", 1, 5, 0.8},
		{"abcdef", "azcdxf", 2, 6, 4.0 / 6}, // b→z, e→x (prefix a, suffix f set aside)
		{"ab", "ba", 2, 2, 0},               // no transpositions: two substitutions
		{"\xff\xfe", "\xff", 1, 2, 0.5},     // a bad byte is one character
	} {
		d, n, err := Levenshtein(tc.a, tc.b)
		if err != nil || d != tc.d || n != tc.n {
			t.Errorf("Levenshtein(%q, %q) = %d, %d, %v; want %d, %d", tc.a, tc.b, d, n, err, tc.d, tc.n)
			continue
		}
		if got := Similarity(d, n); got != tc.sim {
			t.Errorf("Similarity of %q, %q = %v, want %v", tc.a, tc.b, got, tc.sim)
		}
	}
}

// TestLevenshteinBound: a long text with a short difference is cheap (the
// shared ends are set aside); two long different texts are refused.
func TestLevenshteinBound(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	if d, n, err := Levenshtein(long+"x"+long, long+"y"+long); err != nil || d != 1 || n != 200_001 {
		t.Errorf("long texts, one substitution: %d, %d, %v; want 1, 200001, nil", d, n, err)
	}
	if d, n, err := Levenshtein(long, "b"); err != nil || d != 100_000 || n != 100_000 {
		t.Errorf("a long text and a short one: %d, %d, %v; want 100000, 100000, nil", d, n, err)
	}
	a, b := strings.Repeat("ab", 3000), strings.Repeat("ba", 3000)
	if _, _, err := Levenshtein(a, b); err == nil || !strings.Contains(err.Error(), "a table of 36000000 cells; the limit is 25000000") {
		t.Errorf("two long different texts: err %v; want the limit named", err)
	}
}

// levenshteinTable is the textbook full table, the reference the fuzz
// test holds Levenshtein (two rows, ends set aside) to.
func levenshteinTable(a, b []rune) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
		t[i][0] = i
	}
	for j := range t[0] {
		t[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			t[i][j] = min(t[i-1][j]+1, t[i][j-1]+1, t[i-1][j-1]+c)
		}
	}
	return t[len(a)][len(b)]
}

func FuzzLevenshtein(f *testing.F) {
	for _, s := range [][2]string{{"kitten", "sitting"}, {"", "x"}, {"naïve", "naive"}, {"\xff", "\xfe\xff"}, {"abab", "baba"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 300 || len(b) > 300 {
			return
		}
		d, n, err := Levenshtein(a, b)
		if err != nil {
			t.Fatal(err)
		}
		ra, rb := []rune(a), []rune(b)
		if want := levenshteinTable(ra, rb); d != want {
			t.Fatalf("Levenshtein(%q, %q) = %d, table says %d", a, b, d, want)
		}
		if n != max(len(ra), len(rb)) || d > n || (d == 0) != (string(ra) == string(rb)) {
			t.Fatalf("Levenshtein(%q, %q) = %d, %d: out of its bounds", a, b, d, n)
		}
		if back, _, _ := Levenshtein(b, a); back != d {
			t.Fatalf("not symmetric: %d one way, %d the other", d, back)
		}
		if s := Similarity(d, n); s < 0 || s > 1 {
			t.Fatalf("similarity %v outside [0,1]", s)
		}
	})
}

func TestPartition(t *testing.T) {
	for _, tc := range []struct {
		hay            string
		needles        []string
		fold           bool
		found, missing []string
	}{
		{"The capital is Paris.", []string{"Paris", "capital", "France"}, false, []string{"Paris", "capital"}, []string{"France"}},
		{"The capital is Paris.", []string{"paris", "THE"}, false, nil, []string{"paris", "THE"}},
		{"The capital is Paris.", []string{"paris", "THE"}, true, []string{"paris", "THE"}, nil},
		{"ÉTÉ à Paris", []string{"été"}, true, []string{"été"}, nil},
	} {
		found, missing := Partition(tc.hay, tc.needles, tc.fold)
		if !reflect.DeepEqual(found, tc.found) || !reflect.DeepEqual(missing, tc.missing) {
			t.Errorf("Partition(%q, %q, %v) = %q, %q; want %q, %q", tc.hay, tc.needles, tc.fold, found, missing, tc.found, tc.missing)
		}
	}
}

func TestCompilePattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, err string
	}{
		{`\bParis\b`, ""},
		{"", "is empty"},
		{`(a`, "missing closing )"},
		{`(?<=a)b`, "not a valid RE2 pattern"},
		{`(a)\1`, "invalid escape sequence"},
		{strings.Repeat("a", MaxPatternBytes+1), "over the limit of 4096"},
	} {
		_, err := CompilePattern(tc.pattern)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("CompilePattern(%.20q) = %v; want error containing %q", tc.pattern, err, tc.err)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		text   string
		keys   []string
		ok     bool
		reason string
	}{
		{`42`, nil, true, "actual_output is valid JSON"},
		{`{"a":1}`, []string{"a"}, true, `actual_output is a JSON object with keys ["a"]`},
		{`{"a":1`, nil, false, "actual_output is not valid JSON: unexpected end of JSON input"},
		{`[1]`, []string{"a"}, false, "not an object"},
		{`{"c":1}`, []string{"b", "a"}, false, `without keys ["a" "b"]`},
	} {
		got := CheckJSON(tc.text, "actual_output", tc.keys)
		if got.OK != tc.ok || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("CheckJSON(%q, %q) = %v %q; want %v containing %q", tc.text, tc.keys, got.OK, got.Reason, tc.ok, tc.reason)
		}
	}
}

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		fold bool
		at   int
	}{
		{"Paris", "Paris", false, 5},
		{"Paris", "Pari", false, 4},
		{"Paris", "paris", false, 0},
		{"Paris", "paris", true, 5},
		{"naïve café", "naïve cafe", false, 9},
	} {
		if got := FirstDifference(tc.a, tc.b, tc.fold); got != tc.at {
			t.Errorf("FirstDifference(%q, %q, %v) = %d, want %d", tc.a, tc.b, tc.fold, got, tc.at)
		}
	}
}

// excerptByRunes is Excerpt as first written: the whole text as runes.
func excerptByRunes(s string, at int) string {
	r := []rune(s)
	if at >= len(r) {
		return "end of text"
	}
	end := at + 20
	suffix := ""
	if end < len(r) {
		suffix = "…"
	} else {
		end = len(r)
	}
	return fmt.Sprintf("%q%s", string(r[at:end]), suffix)
}

// FuzzExcerpt: Excerpt, which decodes only what it quotes, says what the
// whole-text version said, invalid UTF-8 included.
func FuzzExcerpt(f *testing.F) {
	for _, s := range []string{"", "Paris", "exactly twenty chars", "more than twenty characters here", "naïve café ünïcödé text", "bad \xff\xfe bytes and more text after them",
		`quotes " and \\ back`, "tab\tnew\nline\x7f del", "\u2028 separators \u00a0 nbsp"} {
		for _, at := range []int{0, 3, 19, 20, 21, 40} {
			f.Add(s, at)
		}
	}
	f.Fuzz(func(t *testing.T, s string, at int) {
		if at < 0 || at > 1<<16 {
			return
		}
		if got, want := Excerpt(s, at), excerptByRunes(s, at); got != want {
			t.Fatalf("Excerpt(%q, %d) = %q, want %q", s, at, got, want)
		}
	})
}

func TestClip(t *testing.T) {
	if got := Clip("naïve café", 5); got != "naïve…" || !utf8.ValidString(got) {
		t.Errorf("Clip = %q", got)
	}
	if got := Clip("short", 5); got != "short" {
		t.Errorf("Clip = %q", got)
	}
}

// BenchmarkLevenshteinBound: the largest comparison Levenshtein accepts,
// two 5000-character texts that share no end.
func BenchmarkLevenshteinBound(b *testing.B) {
	x, y := strings.Repeat("ab", 2500), strings.Repeat("ba", 2500)
	for b.Loop() {
		if _, _, err := Levenshtein(x, y); err != nil {
			b.Fatal(err)
		}
	}
}

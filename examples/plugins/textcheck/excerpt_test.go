package textcheck

import (
	"fmt"
	"testing"
)

// excerptByRunes is excerpt as first written: the whole text as runes.
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

// FuzzExcerpt: excerpt, which decodes only what it quotes, says what the
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
		if got, want := excerpt(s, at), excerptByRunes(s, at); got != want {
			t.Fatalf("excerpt(%q, %d) = %q, want %q", s, at, got, want)
		}
	})
}

// TestMismatchReason: the reason built without fmt reads as the
// fmt.Sprintf it replaced.
func TestMismatchReason(t *testing.T) {
	for _, tc := range []struct {
		at        int
		got, want string
	}{
		{0, `"Mountain field while"…`, `"But migrate small ac"…`},
		{12, "end of text", `"x\n\"y\""`},
		{1 << 20, `"ünï"`, "end of text"},
	} {
		want := fmt.Sprintf("actual_output differs from expected_output at character %d: got %s, want %s", tc.at, tc.got, tc.want)
		if got := mismatchReason(tc.at, tc.got, tc.want); got != want {
			t.Errorf("mismatchReason(%d, %q, %q) = %q, want %q", tc.at, tc.got, tc.want, got, want)
		}
	}
}

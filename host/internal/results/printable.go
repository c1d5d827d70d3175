package results

import (
	"strings"
	"unicode"
)

// maxShown bounds a plugin's or a recording's text quoted in a summary line.
const maxShown = 512

// Printable makes text a plugin, a dataset or a recording controls safe to
// print on a terminal: control characters (escape sequences, carriage
// returns that rewrite a line), and bidirectional overrides that reorder
// what is shown, become U+FFFD, and the text is cut to maxShown bytes.
// results.jsonl keeps the original, JSON-escaped.
func Printable(s string) string {
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\uFFFD':
			return r
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r), r == '\u2028', r == '\u2029':
			return '\uFFFD'
		}
		return r
	}, s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

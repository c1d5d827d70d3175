package judge

import (
	"strings"
	"testing"
)

// schemaNameByRunes is schemaName as it was before its no-copy path: the
// reference it must equal.
func schemaNameByRunes(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() == 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "response"
	}
	return b.String()
}

var schemaNameSeeds = []string{"", "verdict", "geval_score", "G-Eval score", "score-0_9", "é", "a\xffb",
	strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("é", 40), "日本語", "a b\tc"}

func TestSchemaName(t *testing.T) {
	for _, s := range schemaNameSeeds {
		if got, want := schemaName(s), schemaNameByRunes(s); got != want {
			t.Errorf("schemaName(%q) = %q, want %q", s, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { schemaName("geval_score") }); n != 0 {
		t.Errorf("schemaName of an acceptable name: %v allocations, want 0", n)
	}
}

func FuzzSchemaName(f *testing.F) {
	for _, s := range schemaNameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := schemaName(s), schemaNameByRunes(s); got != want {
			t.Fatalf("schemaName(%q) = %q, want %q", s, got, want)
		}
	})
}

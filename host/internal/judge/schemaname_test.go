package judge

import (
	"strings"
	"testing"
)

// schemaName keeps an acceptable name as it is; rebuildSchemaName, the
// function as it was before that shortcut (but for growing its buffer
// once), is what it must equal, on these names and any the fuzzer finds.
var schemaNameSeeds = []string{"", "verdict", "geval_score", "G-Eval score", "score-0_9", "é", "a\xffb",
	strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("é", 40), "日本語", "a b\tc"}

func TestSchemaName(t *testing.T) {
	for _, s := range schemaNameSeeds {
		if got, want := schemaName(s), rebuildSchemaName(s); got != want {
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
		if got, want := schemaName(s), rebuildSchemaName(s); got != want {
			t.Fatalf("schemaName(%q) = %q, want %q", s, got, want)
		}
	})
}

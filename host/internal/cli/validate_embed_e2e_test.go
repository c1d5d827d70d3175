package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateNeedsEmbeddingModel: a similarity metric whose judge has no
// embedding_model fails every case at run; validate refuses it (exit 2,
// no key), naming the metric and the missing field, and passes once the
// field is set.
func TestValidateNeedsEmbeddingModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		judge string
		code  int
	}{
		{"without embedding_model", "{model: gpt-4o-mini}", exitUsage},
		{"with embedding_model", "{model: gpt-4o-mini, embedding_model: text-embedding-3-small}", exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := quickstart(t)
			cfg := "version: 1\ndataset: cases.jsonl\njudges:\n  default: " + tc.judge + "\nmetrics:\n  - name: close\n    kind: similarity\n    threshold: 0.8\n"
			if err := os.WriteFile(filepath.Join(dir, "anvil.yaml"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			v := runBinary(t, dir, nil, "validate", "-c", "anvil.yaml")
			if v.code != tc.code {
				t.Fatalf("validate: exit %d, want %d\n%s%s", v.code, tc.code, v.stdout, v.stderr)
			}
			if tc.code == exitOK {
				return
			}
			for _, w := range []string{"anvil.yaml:6: metric close:", "embedding_model"} {
				if !strings.Contains(v.stderr, w) {
					t.Errorf("validate stderr lacks %q:\n%s", w, v.stderr)
				}
			}
		})
	}
}

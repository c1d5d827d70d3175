package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/config"
	"github.com/agentanvil/anvil/host/internal/engine"
)

// TestTrustPolicyComesBeforeLoading: a plugin the policy refuses is
// refused as such — even when its file is not a module at all, which
// proves nothing of it was read as Wasm, compiled or started. The same
// file unrefused fails as the runtime's load error.
func TestTrustPolicyComesBeforeLoading(t *testing.T) {
	dir := t.TempDir()
	garbage := []byte("not a wasm module")
	if err := os.WriteFile(filepath.Join(dir, "p.wasm"), garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(garbage)
	for _, c := range []struct {
		trust string
		want  []string
		not   string
	}{
		{"trust: {require_signatures: true}\n", []string{"plugins.p", "refused by the trust policy", "rule trust.require_signatures", "signer none", "sha256:" + hex.EncodeToString(sum[:])}, "ABI"},
		{"", []string{"plugins.p"}, "trust policy"},
	} {
		yaml := c.trust + "plugins:\n  p: {path: p.wasm, sha256: " + hex.EncodeToString(sum[:]) + "}\nmetrics:\n  - {name: a, kind: exact_match}\n"
		cfg, err := config.Parse(filepath.Join(dir, "anvil.yaml"), []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		_, err = engine.New(context.Background(), cfg, engine.Options{Cache: "off", Getenv: func(string) string { return "" }})
		if err == nil {
			t.Fatalf("%q: loaded", c.trust)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error lacks %q: %v", c.trust, w, err)
			}
		}
		if strings.Contains(err.Error(), c.not) {
			t.Errorf("%q: error mentions %q: %v", c.trust, c.not, err)
		}
	}
}

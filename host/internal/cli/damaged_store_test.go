package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentanvil/anvil/host/internal/store"
)

// TestCacheClearOnADamagedStore: a store whose SQLite header is intact but
// whose pages are damaged opens, and then fails every statement with
// "database disk image is malformed". The run's advice is `cache clear`;
// clear must then reset the file, not fail on it.
func TestCacheClearOnADamagedStore(t *testing.T) {
	dir := quickstart(t)
	path := filepath.Join(dir, ".anvil", "store.db")
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // enough entries for many pages
		if err := st.PutJudge(ctx, fmt.Sprintf("key-%04d", i), "m", []byte(strings.Repeat("v", 2000))); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2 * 4096; i < len(b); i++ { // every page but the first two
		b[i] = 0xAB
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	// What reads it says what to do, and what that is works.
	r := runBinary(t, dir, nil, "cache", "stats")
	if r.code != exitUnverified || !strings.Contains(r.stderr, "cache clear") {
		t.Fatalf("cache stats on a damaged store: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runBinary(t, dir, nil, "cache", "clear")
	if r.code != exitOK || !strings.Contains(r.stdout, "removed it") {
		t.Fatalf("cache clear on a damaged store: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runBinary(t, dir, nil, "cache", "stats")
	if r.code != exitOK || !strings.Contains(r.stdout, "0 entries") {
		t.Fatalf("cache stats after clear: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

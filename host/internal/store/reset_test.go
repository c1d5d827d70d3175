package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResetRemovesACorruptStoreAndNothingElse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	// A store whose pages were overwritten: it keeps SQLite's header, and
	// Open refuses it.
	corrupt := filepath.Join(dir, "custom.db")
	st, err := Open(ctx, corrupt)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutJudge(ctx, "k", "m", []byte("v")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	b, err := os.ReadFile(corrupt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < len(b); i++ {
		b[i] = 0xA5
	}
	if err := os.WriteFile(corrupt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := Open(ctx, corrupt); err == nil {
		st.Close()
		t.Fatal("Open accepted a corrupt store; the test needs one it refuses")
	}
	if err := Reset(corrupt); err != nil {
		t.Fatalf("Reset(corrupt store): %v", err)
	}
	if _, err := os.Stat(corrupt); !os.IsNotExist(err) {
		t.Fatalf("corrupt store still there: %v", err)
	}
	st, err = Open(ctx, corrupt)
	if err != nil {
		t.Fatalf("reopen after reset: %v", err)
	}
	st.Close()

	// Garbage at the default location is the store too.
	def := filepath.Join(dir, ".anvil", "store.db")
	os.MkdirAll(filepath.Dir(def), 0o755)
	os.WriteFile(def, []byte("garbage"), 0o644)
	if err := Reset(def); err != nil {
		t.Fatalf("Reset(default location): %v", err)
	}

	// Anything else is left alone.
	precious := filepath.Join(dir, "anvil.yaml")
	os.WriteFile(precious, []byte("version: 1\n"), 0o644)
	err = Reset(precious)
	if err == nil || !strings.Contains(err.Error(), "remove it by hand") {
		t.Fatalf("Reset(not a store) = %v, want a refusal", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("Reset removed a file that is not a store: %v", err)
	}
	if err := Reset(filepath.Join(dir, "missing.db")); err != nil {
		t.Fatalf("Reset(missing) = %v", err)
	}
}

func TestEachJudgeIsInKeyOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, k := range []string{"c", "a", "b"} {
		if err := st.PutJudge(ctx, k, "m-"+k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err = st.EachJudge(ctx, func(e Entry) error {
		got = append(got, e.Key+"/"+e.Model+"/"+string(e.Value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a/m-a/v-a,b/m-b/v-b,c/m-c/v-c" {
		t.Fatalf("EachJudge = %v", got)
	}
}

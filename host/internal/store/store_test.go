package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nested", ".anvil", "store.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

func TestJudgeCacheRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTemp(t)

	if _, ok, err := s.GetJudge(ctx, "missing"); err != nil || ok {
		t.Fatalf("GetJudge(missing) = ok %v, err %v; want a clean miss", ok, err)
	}
	if err := s.PutJudge(ctx, "k1", "gpt-a", []byte(`{"content":"one"}`)); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetJudge(ctx, "k1")
	if err != nil || !ok || string(got) != `{"content":"one"}` {
		t.Fatalf("GetJudge(k1) = %q, %v, %v", got, ok, err)
	}
	// Replacing keeps one entry and the newest value.
	if err := s.PutJudge(ctx, "k1", "gpt-a", []byte(`{"content":"two"}`)); err != nil {
		t.Fatal(err)
	}
	got, _, _ = s.GetJudge(ctx, "k1")
	if string(got) != `{"content":"two"}` {
		t.Fatalf("after replace GetJudge(k1) = %q", got)
	}
}

func TestStatsAndClear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTemp(t)

	entries := []struct {
		key, model, value string
	}{
		{"a", "m1", "12345"},
		{"b", "m1", "123"},
		{"c", "m2", "1234567890"},
	}
	for _, e := range entries {
		if err := s.PutJudge(ctx, e.key, e.model, []byte(e.value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "geval.steps", "x", []byte("kept")); err != nil {
		t.Fatal(err)
	}

	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 3 || st.Bytes != 18 || st.ByModel["m1"] != 2 || st.ByModel["m2"] != 1 || len(st.ByModel) != 2 {
		t.Fatalf("Stats = %+v; want 3 entries, 18 bytes, m1:2 m2:1", st)
	}

	removed, err := s.Clear(ctx)
	if err != nil || removed != 3 {
		t.Fatalf("Clear = %d, %v; want 3", removed, err)
	}
	st, err = s.Stats(ctx)
	if err != nil || st.Entries != 0 || st.Bytes != 0 || len(st.ByModel) != 0 {
		t.Fatalf("Stats after Clear = %+v, %v; want empty", st, err)
	}
	if v, ok, err := s.Get(ctx, "geval.steps", "x"); err != nil || !ok || string(v) != "kept" {
		t.Fatalf("Clear touched the kv namespace: %q %v %v", v, ok, err)
	}
}

func TestKVNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTemp(t)

	tests := []struct {
		ns, key string
		value   []byte
	}{
		{"a", "k", []byte("from a")},
		{"b", "k", []byte("from b")},
		{"a", "empty", nil},
	}
	for _, tc := range tests {
		if err := s.Put(ctx, tc.ns, tc.key, tc.value); err != nil {
			t.Fatalf("Put(%s,%s): %v", tc.ns, tc.key, err)
		}
	}
	for _, tc := range tests {
		got, ok, err := s.Get(ctx, tc.ns, tc.key)
		if err != nil || !ok || !bytes.Equal(got, tc.value) {
			t.Errorf("Get(%s,%s) = %q, %v, %v; want %q", tc.ns, tc.key, got, ok, err, tc.value)
		}
	}
	if _, ok, err := s.Get(ctx, "c", "k"); ok || err != nil {
		t.Errorf("Get in an unused namespace = ok %v, err %v; want a clean miss", ok, err)
	}
	if err := s.Put(ctx, "", "k", []byte("x")); err == nil {
		t.Error("Put with an empty namespace succeeded; want an error")
	}
}

func TestPersistsAcrossReopenAndUsesWAL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutJudge(ctx, "k", "m", []byte("v")); err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.read.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, ok, err := s.GetJudge(ctx, "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("after reopen GetJudge = %q, %v, %v", v, ok, err)
	}
	var version int
	if err := s.read.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("user_version = %d, %v; want %d", version, err, len(migrations))
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = Open(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "newer than this anvil understands") {
		t.Fatalf("Open(newer schema) err = %v; want a refusal naming the version", err)
	}
}

func TestConcurrentReadersAndWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTemp(t)

	const writers, perWriter = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				key := fmt.Sprintf("w%d-%d", w, i)
				if err := s.PutJudge(ctx, key, fmt.Sprintf("m%d", w%2), []byte(key)); err != nil {
					errs <- err
					return
				}
				got, ok, err := s.GetJudge(ctx, key)
				if err != nil || !ok || string(got) != key {
					errs <- fmt.Errorf("read back %s = %q, %v, %v", key, got, ok, err)
					return
				}
				if err := s.Put(ctx, "ns", key, []byte(key)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != writers*perWriter || st.ByModel["m0"] != writers/2*perWriter {
		t.Fatalf("Stats = %+v; want %d entries", st, writers*perWriter)
	}
}

func TestOpenRejectsEmptyPath(t *testing.T) {
	t.Parallel()
	if _, err := Open(context.Background(), ""); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
}

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// Reset deletes the store file at path (and its -wal and -shm companions)
// when it cannot be opened — a corrupt or truncated file — so `cache clear`
// works on a store nothing else can read. To never delete a file that is
// not a store, it removes only a file that starts with SQLite's header, or
// one named store.db inside a .anvil directory (the default location); any
// other unreadable file is left alone with an error saying so. A missing
// file is not an error.
func Reset(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reset store %s: %w", path, err)
	}
	head := make([]byte, len(sqliteMagic))
	n, _ := io.ReadFull(f, head)
	f.Close()
	ours := bytes.Equal(head[:n], sqliteMagic) ||
		(filepath.Base(path) == "store.db" && filepath.Base(filepath.Dir(path)) == ".anvil")
	if !ours {
		return fmt.Errorf("reset store %s: not a SQLite file and not at the default location; remove it by hand if it is the store", path)
	}
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reset store %s: %w", path, err)
	}
	return nil
}

// Entry is one judge cache entry, as Export writes it.
type Entry struct {
	Key   string
	Model string
	Value []byte
}

// EachJudge calls fn for every judge cache entry, in key order, so an
// export is deterministic.
func (s *Store) EachJudge(ctx context.Context, fn func(Entry) error) error {
	rows, err := s.read.QueryContext(ctx, `SELECT key, model, value FROM judge_cache ORDER BY key`)
	if err != nil {
		return fmt.Errorf("read judge cache: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.Key, &e.Model, &e.Value); err != nil {
			return fmt.Errorf("read judge cache: %w", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read judge cache: %w", err)
	}
	return nil
}

// IsCorrupt reports whether err says the store's file is damaged (SQLite's
// SQLITE_CORRUPT or SQLITE_NOTADB, extended codes included): a file that
// opened, because its header is intact, but whose pages are not a database
// any more. Reset is then the way back.
func IsCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

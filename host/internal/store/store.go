// Package store is Anvil's embedded, persistent state: one SQLite file
// (usually .anvil/store.db) holding the judge cache and a small key/value
// namespace other host parts use for work worth keeping across runs.
//
// Invariants:
//   - One file, opened in WAL mode with a busy timeout, so many goroutines
//     (and a second anvil process) can read while one writes.
//   - Writes go through a single connection, reads through a pool; a Store is
//     safe for concurrent use.
//   - The schema version lives in PRAGMA user_version. Open migrates an older
//     file forward and refuses a file written by a newer schema rather than
//     guessing at it.
//   - The store keeps bytes, never interprets them: the judge layer decides
//     what a cache value is, the store only counts and returns it.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// busyTimeout is how long a statement waits for another writer before
// failing with SQLITE_BUSY. Generous, because a cache write losing a race is
// not worth an error.
const busyTimeout = 10 * time.Second

// Store is an open store file.
type Store struct {
	path string
	// write has exactly one connection: SQLite admits one writer at a time,
	// and queueing writers in Go is cheaper and fairer than spinning on
	// SQLITE_BUSY between connections.
	write *sql.DB
	// read is a pool; WAL readers never block the writer nor each other.
	read *sql.DB
	// getJudge is the cache lookup, prepared once: it is the hot path of a
	// replayed or repeated run.
	getJudge *sql.Stmt
}

// Stats describes the judge cache.
type Stats struct {
	// Entries is the number of cached judge responses.
	Entries int64
	// Bytes is the total size of the cached values.
	Bytes int64
	// ByModel counts entries per judge model.
	ByModel map[string]int64
}

// Open opens (creating if needed) the store file at path, creating its
// parent directory, and migrates its schema to the current version.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open store %s: create directory: %w", path, err)
		}
	}
	s := &Store{path: path}
	var err error
	if s.write, err = openPool(path, 1); err != nil {
		return nil, err
	}
	// The writer connects and migrates first: WAL mode is a property of the
	// file and must be set before readers open it.
	if err := s.migrate(ctx); err != nil {
		s.write.Close()
		return nil, err
	}
	if s.read, err = openPool(path, max(4, runtime.GOMAXPROCS(0))); err != nil {
		s.write.Close()
		return nil, err
	}
	if s.getJudge, err = s.read.PrepareContext(ctx, `SELECT value FROM judge_cache WHERE key = ?`); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

func openPool(path string, conns int) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	// NORMAL is durable across application crashes in WAL mode; only an OS
	// crash can lose the last transactions, which for a cache is acceptable.
	q.Add("_pragma", "synchronous(NORMAL)")
	// Transactions take the write lock up front, so a read-then-write
	// transaction never fails with SQLITE_BUSY halfway.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// Path returns the file the store was opened from.
func (s *Store) Path() string { return s.path }

// Close releases the store's connections. The file stays.
func (s *Store) Close() error {
	var errs []error
	if s.getJudge != nil {
		errs = append(errs, s.getJudge.Close())
	}
	if s.read != nil {
		errs = append(errs, s.read.Close())
	}
	if s.write != nil {
		errs = append(errs, s.write.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// GetJudge returns the cached judge response under key.
func (s *Store) GetJudge(ctx context.Context, key string) (value []byte, ok bool, err error) {
	err = s.getJudge.QueryRowContext(ctx, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read judge cache entry %.12s…: %w", key, err)
	}
	return value, true, nil
}

// PutJudge stores a judge response under key, replacing any previous one.
// model is kept beside it so Stats can break the cache down by judge model.
func (s *Store) PutJudge(ctx context.Context, key, model string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	_, err := s.write.ExecContext(ctx, `
		INSERT INTO judge_cache (key, model, value, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET model = excluded.model, value = excluded.value, created_at = excluded.created_at`,
		key, model, value, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("write judge cache entry %.12s…: %w", key, err)
	}
	return nil
}

// Stats counts the judge cache.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{ByModel: map[string]int64{}}
	rows, err := s.read.QueryContext(ctx,
		`SELECT model, COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM judge_cache GROUP BY model ORDER BY model`)
	if err != nil {
		return Stats{}, fmt.Errorf("count judge cache: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var model string
		var n, size int64
		if err := rows.Scan(&model, &n, &size); err != nil {
			return Stats{}, fmt.Errorf("count judge cache: %w", err)
		}
		st.ByModel[model] = n
		st.Entries += n
		st.Bytes += size
	}
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("count judge cache: %w", err)
	}
	return st, nil
}

// Clear removes every judge cache entry and reports how many there were.
// The key/value namespaces are untouched.
func (s *Store) Clear(ctx context.Context) (removed int64, err error) {
	res, err := s.write.ExecContext(ctx, `DELETE FROM judge_cache`)
	if err != nil {
		return 0, fmt.Errorf("clear judge cache: %w", err)
	}
	removed, err = res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("clear judge cache: %w", err)
	}
	// Give the space back to the file system promptly: a cleared cache that
	// keeps its size surprises people.
	if _, err := s.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return removed, fmt.Errorf("clear judge cache: checkpoint: %w", err)
	}
	return removed, nil
}

// Get returns the value under (namespace, key).
func (s *Store) Get(ctx context.Context, namespace, key string) ([]byte, bool, error) {
	var value []byte
	err := s.read.QueryRowContext(ctx, `SELECT value FROM kv WHERE namespace = ? AND key = ?`, namespace, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s/%s: %w", namespace, key, err)
	}
	return value, true, nil
}

// Put stores value under (namespace, key), replacing any previous value.
func (s *Store) Put(ctx context.Context, namespace, key string, value []byte) error {
	if namespace == "" {
		return fmt.Errorf("write %s/%s: empty namespace", namespace, key)
	}
	if value == nil {
		value = []byte{} // NOT NULL column; an empty value is still a value
	}
	_, err := s.write.ExecContext(ctx, `
		INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		namespace, key, value, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", namespace, key, err)
	}
	return nil
}

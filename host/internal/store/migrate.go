package store

import (
	"context"
	"fmt"
)

// migrations are applied in order; migrations[i] takes the schema from
// user_version i to i+1. Append only: a released migration never changes,
// because files in the wild were built by it.
var migrations = []string{
	// 1: the judge cache and the generic key/value namespace.
	`CREATE TABLE judge_cache (
		key        TEXT    NOT NULL PRIMARY KEY,
		model      TEXT    NOT NULL,
		value      BLOB    NOT NULL,
		created_at INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE INDEX judge_cache_model ON judge_cache (model);
	CREATE TABLE kv (
		namespace  TEXT    NOT NULL,
		key        TEXT    NOT NULL,
		value      BLOB    NOT NULL,
		updated_at INTEGER NOT NULL,
		PRIMARY KEY (namespace, key)
	) WITHOUT ROWID;`,
}

// migrate brings the file's schema to len(migrations) inside one transaction,
// so a crash mid-migration leaves the previous version intact.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("open store %s: begin migration: %w", s.path, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit

	var version int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("open store %s: read schema version: %w", s.path, err)
	}
	if version > len(migrations) {
		return fmt.Errorf("open store %s: schema version %d is newer than this anvil understands (%d); use a newer anvil or another store path",
			s.path, version, len(migrations))
	}
	if version == len(migrations) {
		return nil
	}
	for v := version; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("open store %s: migrate schema %d -> %d: %w", s.path, v, v+1, err)
		}
	}
	// PRAGMA takes no bound parameters; the value is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations))); err != nil {
		return fmt.Errorf("open store %s: record schema version: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("open store %s: commit migration: %w", s.path, err)
	}
	return nil
}

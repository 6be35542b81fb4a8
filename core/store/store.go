package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// BusyTimeout is how long a statement waits for another connection's or
// process's lock before it fails with "database is locked".
const BusyTimeout = 10 * time.Second

// Store is the open database. It is safe for concurrent use.
type Store struct {
	db  *gorm.DB
	log *slog.Logger
	// writer is held by this process's write transaction (capacity 1):
	// writers queue here and are woken at once, not in SQLite's busy
	// handler, which polls with sleeps of up to 100 ms.
	writer chan struct{}
}

// Open opens (creating if needed) the database at path, applies pending
// migrations and returns the store. A database that another process holds
// locked for longer than BusyTimeout yields an error of class
// errdefs.ErrUnavailable.
func Open(ctx context.Context, path string, log *slog.Logger) (*Store, error) {
	if log == nil {
		return nil, errors.New("open store: a logger is required")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, errdefs.Invalidf("database path %q: '?' and '#' are not allowed in the path", path)
	}
	// Create the file private before SQLite does (SQLite gives its -wal and
	// -shm files the same mode as the database).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	f.Close()

	// _txlock=immediate: a write transaction takes the write lock at BEGIN, so
	// concurrent writers queue on the busy timeout instead of failing when a
	// read lock cannot be upgraded. synchronous=NORMAL in WAL mode loses no
	// committed transaction when a process dies (only on power loss).
	dsn := fmt.Sprintf("%s?_journal_mode=WAL&_busy_timeout=%d&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL",
		path, BusyTimeout.Milliseconds())
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{
		Logger:         logger.Discard,
		NowFunc:        func() time.Time { return time.Now().UTC() },
		TranslateError: true,
	})
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, classify(err))
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	// The pool keeps its connections open: each open costs a parse of the
	// schema and the DSN's pragmas.
	sqlDB.SetMaxOpenConns(maxConns)
	sqlDB.SetMaxIdleConns(maxConns)
	s := &Store{db: db, log: log, writer: make(chan struct{}, 1)}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	if err := sqlDB.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// maxConns bounds the connections: one writer at a time, readers beside it.
const maxConns = 8

// tx runs fn in a write transaction, one at a time in this process. Its
// BEGIN waits up to BusyTimeout for another process's lock; when that runs
// out, the error is of class errdefs.ErrUnavailable like every other locked
// statement's.
func (s *Store) tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writer }()
	err := s.db.WithContext(ctx).Transaction(fn)
	if err != nil && errdefs.Class(err) == nil {
		return classify(err)
	}
	return err
}

// IntegrityCheck runs SQLite's integrity and foreign-key checks and returns an
// error listing what they found, or nil when the database is sound.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	var rows []string
	if err := s.db.WithContext(ctx).Raw("PRAGMA integrity_check").Scan(&rows).Error; err != nil {
		return fmt.Errorf("integrity check: %w", classify(err))
	}
	if len(rows) != 1 || rows[0] != "ok" {
		return fmt.Errorf("integrity check failed: %s", strings.Join(rows, "; "))
	}
	var fk []map[string]any
	if err := s.db.WithContext(ctx).Raw("PRAGMA foreign_key_check").Scan(&fk).Error; err != nil {
		return fmt.Errorf("foreign key check: %w", classify(err))
	}
	if len(fk) > 0 {
		return fmt.Errorf("foreign key check failed: %d rows reference missing parents (first: %v)", len(fk), fk[0])
	}
	return nil
}

// classify gives driver errors their class: a lock held past the busy timeout
// is "unavailable", a duplicate key a "conflict", a missing row "not found".
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		return errdefs.NotFoundf("%s", err.Error())
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return errdefs.NotFoundf("a referenced row does not exist: %s", err.Error())
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return errdefs.Conflictf("%s", err.Error())
	case strings.Contains(err.Error(), "database is locked"), strings.Contains(err.Error(), "database table is locked"):
		return errdefs.Unavailablef("database is locked by another process (waited %s): %s", BusyTimeout, err.Error())
	}
	return err
}

// take reads the row of type T with this id into v; a missing row is an
// error of class not found that names what.
func take[T any](db *gorm.DB, what, id string, v *T) error {
	row, err := first[T](db.Where("id = ?", id), errdefs.NotFoundf("%s %s not found", what, id), "read "+what+" "+id)
	if err == nil {
		*v = row
	}
	return err
}

// first returns the first row of T that q selects; with none, missing
// (nil: the zero row and no error); another error is wrapped with doing.
func first[T any](q *gorm.DB, missing error, doing string) (T, error) {
	var row T
	err := q.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, missing
	}
	if err != nil {
		return row, fmt.Errorf("%s: %w", doing, classify(err))
	}
	return row, nil
}

// list returns the rows of T that q selects, in order; doing names the
// read in an error ("list providers").
func list[T any](q *gorm.DB, order, doing string) ([]T, error) {
	var rows []T
	if err := q.Order(order).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("%s: %w", doing, classify(err))
	}
	return rows, nil
}

// affected is the outcome of a write to one row: res's error wrapped with
// doing ("delete schedule ID"), or missing when it touched no row.
func affected(res *gorm.DB, doing string, missing error) error {
	if res.Error != nil {
		return fmt.Errorf("%s: %w", doing, classify(res.Error))
	}
	if res.RowsAffected == 0 {
		return missing
	}
	return nil
}

// deleteByID deletes the row of T with this id; a missing row is an error
// of class not found that names what.
func deleteByID[T any](db *gorm.DB, what, id string) error {
	return affected(db.Where("id = ?", id).Delete(new(T)), "delete "+what+" "+id, errdefs.NotFoundf("%s %s not found", what, id))
}

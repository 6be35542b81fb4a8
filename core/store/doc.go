// Package store is Hivecrew's persistence: one SQLite database (WAL, busy
// timeout, foreign keys, immediate write transactions) accessed through gorm.
//
// The schema is versioned: migrations run in order, each in its own
// transaction, and the version reached is recorded in schema_versions. A
// database written by a newer Hivecrew is refused rather than guessed at.
// Migration 1 creates the tables from the models as they are declared; a later
// change to a model adds a migration that alters existing databases (and
// tolerates the column already being there, since fresh databases get the new
// shape from migration 1).
//
// Every multi-row write happens in one transaction, so a crash never leaves
// half of it behind.
package store

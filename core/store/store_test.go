package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
)

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil)).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hivecrew.db")
	s, err := Open(context.Background(), path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestOpenMigratesOnceAndIsPrivate(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != LatestSchemaVersion() {
		t.Fatalf("schema version = %d, %v; want %d", v, err, LatestSchemaVersion())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("database mode %v, want 0600", fi.Mode().Perm())
	}
	// Reopening applies nothing again.
	s2, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var rows int64
	s2.db.Model(&SchemaVersion{}).Count(&rows)
	if rows != int64(len(migrations())) {
		t.Fatalf("schema_versions has %d rows after reopening, want %d", rows, len(migrations()))
	}
	var journal string
	s2.db.Raw("PRAGMA journal_mode").Scan(&journal)
	var fk int
	s2.db.Raw("PRAGMA foreign_keys").Scan(&fk)
	if journal != "wal" || fk != 1 {
		t.Fatalf("journal_mode=%q foreign_keys=%d, want wal and 1", journal, fk)
	}
	if err := s2.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	if err := s.db.Create(&SchemaVersion{Version: LatestSchemaVersion() + 1}).Error; err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(ctx, path, testLogger(t))
	if !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "upgrade Hivecrew") {
		t.Fatalf("Open of a newer database = %v, want an unsupported error saying to upgrade", err)
	}
}

func TestOpenRejectsBadInput(t *testing.T) {
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "a?b.db"), testLogger(t)); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("path with '?' = %v, want invalid", err)
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"), testLogger(t)); err == nil {
		t.Fatal("a database in a missing directory opened")
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), nil); err == nil {
		t.Fatal("Open without a logger succeeded")
	}
}

func TestSettingsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	defaults := config.Defaults("linux", "/home/ada")

	got, err := s.LoadSettings(ctx, defaults)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxConcurrentVMs != defaults.MaxConcurrentVMs || got.OutputDirectory != defaults.OutputDirectory {
		t.Fatalf("empty store did not give the defaults: %+v", got)
	}

	patched, err := s.PatchSettings(ctx, defaults, []byte(`{"maxConcurrentVMs": 6, "warmPoolSize": 3, "toolPolicy": {"run_shell": "deny"}}`))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := s.LoadSettings(ctx, defaults)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.MaxConcurrentVMs != 6 || loaded.WarmPoolSize != 3 || loaded.ToolPolicy.For("run_shell") != config.Deny {
		t.Fatalf("reloaded settings = %+v, want the patch (%+v)", loaded, patched)
	}

	// A bad patch changes nothing.
	if _, err := s.PatchSettings(ctx, defaults, []byte(`{"maxConcurrentVMs": 1000}`)); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("bad patch = %v, want invalid", err)
	}
	again, _ := s.LoadSettings(ctx, defaults)
	if again.MaxConcurrentVMs != 6 {
		t.Fatalf("a refused patch changed maxConcurrentVMs to %d", again.MaxConcurrentVMs)
	}
}

func TestLoadSettingsKeepsDefaultForUnusableValue(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	defaults := config.Defaults("linux", "/home/ada")
	// As a future or past version might have left them.
	for _, row := range []Setting{
		{Key: "apiPort", Value: `6000`},
		{Key: "vmMemoryMB", Value: `1`},
		{Key: "removedSetting", Value: `true`},
	} {
		if err := s.db.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LoadSettings(ctx, defaults)
	if err != nil {
		t.Fatal(err)
	}
	if got.APIPort != 6000 {
		t.Fatalf("usable stored apiPort lost: %d", got.APIPort)
	}
	if got.VMMemoryMB != defaults.VMMemoryMB {
		t.Fatalf("unusable vmMemoryMB=%d, want the default %d", got.VMMemoryMB, defaults.VMMemoryMB)
	}
}

func TestAPIKeys(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	key, row, err := s.CreateAPIKey(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "hc_") || len(key) < 40 {
		t.Fatalf("key %q does not look like hc_<secret>", key)
	}
	got, err := s.VerifyAPIKey(ctx, key)
	if err != nil || got.ID != row.ID {
		t.Fatalf("VerifyAPIKey(own key) = %v, %v", got.ID, err)
	}
	if got.LastUsedAt == nil {
		t.Fatal("LastUsedAt not recorded on first use")
	}
	for _, bad := range []string{"", "hc_", key[:len(key)-1] + "x", "xx" + key[2:], key + "x", strings.Repeat("a", 300)} {
		if _, err := s.VerifyAPIKey(ctx, bad); !errors.Is(err, ErrBadAPIKey) {
			t.Errorf("VerifyAPIKey(%q) = %v, want ErrBadAPIKey", bad, err)
		}
	}

	// Only the hash is stored: the key's secret part appears nowhere on disk.
	s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	for _, f := range []string{path, path + "-wal"} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(key[len(row.Prefix):])) {
			t.Fatalf("%s contains the API key in clear", f)
		}
	}

	next, _, err := s.ReplaceAPIKey(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyAPIKey(ctx, key); !errors.Is(err, ErrBadAPIKey) {
		t.Fatalf("replaced key still verifies: %v", err)
	}
	if _, err := s.VerifyAPIKey(ctx, next); err != nil {
		t.Fatalf("new key does not verify: %v", err)
	}
	if err := s.RevokeAPIKey(ctx, next[:apiKeyLookupLen]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyAPIKey(ctx, next); !errors.Is(err, ErrBadAPIKey) {
		t.Fatalf("revoked key verifies: %v", err)
	}
	if err := s.RevokeAPIKey(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("revoking an unknown key = %v, want not found", err)
	}
	keys, err := s.ListAPIKeys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListAPIKeys = %d keys, %v; want 2", len(keys), err)
	}
	if _, _, err := s.CreateAPIKey(ctx, "  "); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("key without a name = %v, want invalid", err)
	}
}

// execAll runs SQL statements on s: a test rebuilding an old schema.
func execAll(t testing.TB, s *Store, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if err := s.db.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// reopen closes s and opens the database at path again, migrating it to
// the latest schema (checked); the new store is closed when the test
// ends.
func reopen(t testing.TB, s *Store, path string) *Store {
	t.Helper()
	s.Close()
	s2, err := Open(context.Background(), path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	if v, err := s2.SchemaVersion(context.Background()); err != nil || v != LatestSchemaVersion() {
		t.Fatalf("schema version %d, %v; want %d", v, err, LatestSchemaVersion())
	}
	return s2
}

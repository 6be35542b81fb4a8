package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// fileMode is the only mode a secrets file may have.
const fileMode fs.FileMode = 0o600

// File is a Store kept in a JSON object (ref -> value) in a file only its
// owner may read or write. Every change rewrites the file atomically: a
// temporary file in the same directory, fsynced, renamed over the old one,
// then the directory fsynced; a crash leaves the old file or the new one. A
// file that is not a JSON object of strings is an error, and is never
// overwritten. The file is the source of truth: every call reads it.
type File struct {
	path string
	log  *slog.Logger

	// mu serializes every read-modify-write of the file.
	mu sync.Mutex
}

var _ Store = (*File)(nil)

// NewFile opens the file store at path, creating its directory (0700) if
// needed; the file itself is created by the first Set. An existing file must
// be a regular file holding a JSON object of strings; a mode wider than 0600 is
// narrowed to 0600 and logged as a warning. log may be nil.
func NewFile(path string, log *slog.Logger) (*File, error) {
	if path == "" {
		return nil, errors.New("secrets file: empty path")
	}
	f := &File{path: path, log: orDiscard(log)}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secrets file directory: %w", err)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("secrets file: %w", err)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("secrets file %s is not a regular file (%s)", path, info.Mode().Type())
	}
	if perm := info.Mode().Perm(); perm&^fileMode != 0 {
		if err := os.Chmod(path, fileMode); err != nil {
			return nil, fmt.Errorf("secrets file %s has mode %04o and cannot be narrowed to %04o: %w",
				path, perm, fileMode, err)
		}
		f.log.Warn("secrets file was readable by others; narrowed its mode",
			"path", path, "was", fmt.Sprintf("%04o", perm), "now", fmt.Sprintf("%04o", fileMode))
	}
	if _, err := f.load(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Kind returns KindFile.
func (f *File) Kind() string { return KindFile }

// Get returns the value stored under ref.
func (f *File) Get(ref string) (string, error) {
	if err := checkRef(ref); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return "", err
	}
	v, ok := m[ref]
	if !ok {
		return "", notFound(ref)
	}
	return v, nil
}

// Set stores value under ref and rewrites the file.
func (f *File) Set(ref, value string) error {
	if err := checkSet(ref, value); err != nil {
		return err
	}
	return f.update("set", ref, func(m map[string]string) bool {
		if old, ok := m[ref]; ok && old == value {
			return false
		}
		m[ref] = value
		return true
	})
}

// Delete removes ref and rewrites the file; an absent ref leaves it as is.
func (f *File) Delete(ref string) error {
	if err := checkRef(ref); err != nil {
		return err
	}
	return f.update("delete", ref, func(m map[string]string) bool {
		if _, ok := m[ref]; !ok {
			return false
		}
		delete(m, ref)
		return true
	})
}

// update changes the stored secrets under mu: change changes m and says
// whether it did; only then is the file rewritten (an error of it says
// what was done to ref).
func (f *File) update(what, ref string, change func(m map[string]string) bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return err
	}
	if !change(m) {
		return nil
	}
	if err := f.save(m); err != nil {
		return fmt.Errorf("%s secret %q: %w", what, ref, err)
	}
	return nil
}

// load reads the file; an absent or empty file is an empty store. The caller
// holds mu, except in NewFile where f is not yet shared.
func (f *File) load() (map[string]string, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read secrets file: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]string{}, nil
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("secrets file %s is corrupt (left untouched; repair or remove it): %w", f.path, err)
	}
	if m == nil { // the file held JSON null
		m = map[string]string{}
	}
	return m, nil
}

// save replaces the file with m, atomically. The caller holds mu.
func (f *File) save(m map[string]string) (err error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode secrets: %w", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary secrets file: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, removeIfExists(tmp.Name()))
		}
	}()
	// CreateTemp uses 0600 already; say so explicitly in case a umask or a
	// future change disagrees.
	if err := tmp.Chmod(fileMode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chmod temporary secrets file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write temporary secrets file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync temporary secrets file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temporary secrets file: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("replace secrets file: %w", err)
	}
	if err := syncDir(dir); err != nil {
		// The new file is in place; only its durability across a crash is
		// in doubt, which the caller should hear about.
		return fmt.Errorf("sync secrets directory: %w", err)
	}
	return nil
}

// removeIfExists removes path; an absent path is not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a directory so a rename in it survives a crash. Windows
// cannot open a directory for syncing and does not need to.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

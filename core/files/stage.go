package files

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Source is a file to become one of a task's (or a preset's) input files.
// A kept source is copied even when the others are moved: it belongs to
// another task (an output a continuation takes, say). Mime is the type to
// record ("" for the one of its name).
type Source struct {
	Name, Path, Mime string
	Keep             bool
}

// Staged is a file put into the data folder: its checked name, size, type
// and path relative to the data folder (with forward slashes).
type Staged struct {
	Name, Mime, Path string
	Size             int64
}

// Stage puts srcs into dir under their checked names, moving them (move)
// or copying them; home is the data folder the paths it returns are
// relative to. On any error it removes root (dir or a folder above it)
// and what it holds. Two sources with one name are an invalid request.
func Stage(home, dir, root string, srcs []Source, move bool) ([]Staged, error) {
	if len(srcs) == 0 {
		return nil, nil
	}
	fail := func(err error) ([]Staged, error) {
		os.RemoveAll(root)
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(fmt.Errorf("create %s: %w", dir, err))
	}
	out := make([]Staged, 0, len(srcs))
	seen := map[string]bool{}
	for _, s := range srcs {
		name, err := CheckName(s.Name)
		if err != nil {
			return fail(err)
		}
		if seen[name] {
			return fail(errdefs.Invalidf("input file %q given twice", name))
		}
		seen[name] = true
		dst := filepath.Join(dir, name)
		if err := Put(s.Path, dst, move && !s.Keep); err != nil {
			return fail(fmt.Errorf("store input file %s: %w", name, err))
		}
		fi, err := os.Stat(dst)
		if err != nil {
			return fail(fmt.Errorf("store input file %s: %w", name, err))
		}
		rel, _ := filepath.Rel(home, dst)
		mime := s.Mime
		if mime == "" {
			mime = MimeType(name)
		}
		out = append(out, Staged{Name: name, Size: fi.Size(), Mime: mime, Path: filepath.ToSlash(rel)})
	}
	return out, nil
}

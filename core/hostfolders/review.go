package hostfolders

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/hostpath"
)

// Op is what a change does to a file.
type Op string

// Changes a review lists.
const (
	Added    Op = "added"
	Modified Op = "modified"
	Deleted  Op = "deleted"
)

// Change is one file the agent added, modified or deleted in its copy.
type Change struct {
	// Path is the file's slash-separated path in the folder (shown with
	// unsafe characters escaped).
	Path string
	Op   Op
	// Before is the host file as the task found it (modified, deleted);
	// After the agent's version (added, modified).
	Before, After *Entry
	// Staged is the agent's version, kept by the host for the review.
	Staged string
	// Refused says why the change cannot be applied (a link, a special
	// file, a hidden or unsafe path, over the limits); empty if it can.
	Refused string
}

// Review compares the agent's copy of m's folder (shared/folders/NAME,
// with the VM stopped) with m. What changed is copied into keep (created),
// at most lim; the changes are returned by path. A copy the guest made a
// link, or reached through one, is refused, never followed.
func Review(ctx context.Context, m Manifest, shared, keep string, lim Limits) ([]Change, error) {
	lim = lim.withDefaults()
	var out []Change
	root, err := files.OpenShared(shared, path.Join(Sub, m.Name))
	if errors.Is(err, fs.ErrNotExist) {
		// The agent removed the whole folder: every file is deleted.
		root = nil
	} else if err != nil {
		return nil, fmt.Errorf("open the agent's copy: %w", err)
	}
	if err := os.MkdirAll(keep, 0o700); err != nil {
		return nil, err
	}
	kept, err := os.OpenRoot(keep)
	if err != nil {
		return nil, err
	}
	defer kept.Close()
	seen := map[string]bool{} // regular files of the copy, and entries refused
	var refusedDirs []string
	var total int64
	walked := 0
	refuse := func(name string, op Op, why string) {
		seen[name] = true
		c := Change{Path: files.Printable(name), Op: op, Refused: why}
		if e, ok := m.Files[name]; ok {
			c.Before = &e
		}
		out = append(out, c)
	}
	if root != nil {
		defer root.Close()
		err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if name == "." {
				return err
			}
			if walked++; walked > 4*lim.MaxFiles {
				return errdefs.TooLargef("the agent's copy of %s has over %d entries", m.Name, 4*lim.MaxFiles)
			}
			_, known := m.Files[name]
			op := Added
			if known {
				op = Modified
			}
			if err != nil {
				refuse(name, op, err.Error())
				return nil
			}
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				refuse(name, op, "a symbolic link (never followed)")
				refusedDirs = append(refusedDirs, name)
				return nil
			case d.IsDir():
				return nil
			case !d.Type().IsRegular():
				refuse(name, op, "not a regular file")
				return nil
			}
			seen[name] = true
			before := m.Files[name]
			after, err := hashFile(root, name)
			if err != nil {
				refuse(name, op, err.Error())
				return nil
			}
			if known && after.SHA256 == before.SHA256 {
				return nil // unchanged (its mode is the host's to keep)
			}
			c := Change{Path: name, Op: op, After: &after}
			if known {
				c.Before = &before
			}
			if why := unsafePath(name); why != "" {
				c.Path, c.Refused = files.Printable(name), why
				out = append(out, c)
				return nil
			}
			if after.Size > lim.MaxBytes-total {
				c.Refused = fmt.Sprintf("over the review's limit of %d MB", lim.MaxBytes>>20)
				out = append(out, c)
				return nil
			}
			if err := kept.MkdirAll(path.Dir(name), 0o700); err != nil {
				return err
			}
			got, err := copyFile(root, name, kept, name, 0o600, lim.MaxBytes-total)
			if err != nil {
				c.Refused = err.Error()
				out = append(out, c)
				return nil
			}
			total += got.Size
			c.After, c.Staged = &got, filepath.Join(keep, filepath.FromSlash(name))
			out = append(out, c)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		if seen[name] {
			continue
		}
		before := m.Files[name]
		c := Change{Path: name, Op: Deleted, Before: &before}
		for _, d := range refusedDirs {
			if strings.HasPrefix(name, d+"/") {
				c.Refused = "its folder was replaced by a link"
			}
		}
		if c.Refused == "" {
			c.Refused = unsafePath(name)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// unsafePath says why the agent may not change a path of the host folder:
// a hidden element (a program on the host may run what it holds), or a
// name an output may not have.
func unsafePath(name string) string {
	if err := files.CheckOutputName(name); err != nil {
		return err.Error()
	}
	return ""
}

// Apply writes one change, approved by the user, to m's host folder: the
// agent's version replaces or adds the file, or the file is removed. The
// host file must still be as the task found it (for an added file: absent);
// otherwise the change is a conflict (errdefs.ErrConflict) and nothing is
// written. The folder, as its path leads now, must not be, be inside or
// hold one of fence's.
func Apply(m Manifest, c Change, fence hostpath.Fence) error {
	if c.Refused != "" {
		return errdefs.Invalidf("%s cannot be applied: %s", c.Path, c.Refused)
	}
	if unsafePath(c.Path) != "" {
		return errdefs.Invalidf("%s is not a path the agent may change", files.Printable(c.Path))
	}
	root, err := os.OpenRoot(m.Path)
	if err != nil {
		return fmt.Errorf("open host folder %s: %w", m.Path, err)
	}
	defer root.Close()
	chain, err := hostpath.ChainOf(root, m.Path)
	if err == nil {
		err = fence.Check("host folder "+m.Path, chain)
	}
	if err != nil {
		return err
	}
	if err := Check(root, c); err != nil {
		return err
	}
	if c.Op == Deleted {
		return root.Remove(c.Path)
	}
	perm := fs.FileMode(0o644)
	if c.Before != nil {
		perm = c.Before.Mode.Perm()
	}
	dir := path.Dir(c.Path)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s in %s: %w", dir, m.Path, err)
	}
	in, err := os.Open(c.Staged)
	if err != nil {
		return fmt.Errorf("the agent's version of %s: %w", c.Path, err)
	}
	defer in.Close()
	tmp := path.Join(dir, fmt.Sprintf(".hivecrew-%s.tmp", c.After.SHA256[:12]))
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", c.Path, err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if err == nil && sum(h) != c.After.SHA256 {
		err = errors.New("the kept copy no longer matches what the agent wrote")
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = Check(root, c) // once more, just before the file is replaced
	}
	if err == nil {
		err = root.Rename(tmp, c.Path)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

// Check reports whether the host file of a change is still as the task
// found it: a conflict (errdefs.ErrConflict) if not.
func Check(root *os.Root, c Change) error {
	fi, err := root.Lstat(c.Path)
	if c.Op == Added {
		if err == nil {
			return errdefs.Conflictf("%s exists on this computer now", c.Path)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return errdefs.Conflictf("%s: %v", c.Path, err)
		}
		return nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errdefs.Conflictf("%s was removed on this computer since the task started", c.Path)
	case err != nil:
		return errdefs.Conflictf("%s: %v", c.Path, err)
	case !fi.Mode().IsRegular():
		return errdefs.Conflictf("%s is no longer a regular file on this computer", c.Path)
	}
	now, err := hashFile(root, c.Path)
	if err != nil {
		return errdefs.Conflictf("%s: %v", c.Path, err)
	}
	if now.SHA256 != c.Before.SHA256 {
		return errdefs.Conflictf("%s changed on this computer since the task started", c.Path)
	}
	return nil
}

// Keep copies the folders and regular files under shared/folders (a
// stopped VM's copies of the granted folders) into to, for a task that
// goes on in another VM, at most DefaultMaxBytes in all. Links and special
// files are left behind, as the review would refuse them; a folders the
// guest made a link is refused. Without shared/folders it keeps nothing.
func Keep(ctx context.Context, shared, to string) error {
	src, err := files.OpenShared(shared, Sub)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	dst, err := os.OpenRoot(to)
	if err != nil {
		return err
	}
	defer dst.Close()
	var total int64
	return fs.WalkDir(src.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		switch {
		case err != nil:
			return err
		case name == ".":
			return nil
		case d.IsDir():
			return dst.Mkdir(name, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		e, err := copyFile(src, name, dst, name, 0o600|modeX(d), DefaultMaxBytes-total)
		if errors.Is(err, errdefs.ErrTooLarge) {
			return errdefs.TooLargef("the copies of the host folders are over %d MB", DefaultMaxBytes>>20)
		}
		total += e.Size
		return err
	})
}

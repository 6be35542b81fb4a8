// Package reveal opens a task's output file on the host, or shows the
// folder it is in, with the desktop's opener (xdg-open on Linux, open on
// macOS). The file's name and contents are the guest's, so before
// anything is opened the path is checked the way output folders are
// (core/hostpath): it must lie below the task's output folder, reached
// from it without a link in any component, through folders the user (or
// root) owns, and be a regular file. A file the opener would run rather
// than show (executable, or a launcher such as .desktop) is shown in its
// folder but never opened.
package reveal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/hostpath"
)

// Launch runs the desktop's opener on a path: a file (opened with its
// default application) or a folder (shown in the file manager).
type Launch func(ctx context.Context, path string) error

// runnable are extensions whose default "open" runs them on common
// desktops.
var runnable = []string{".desktop", ".sh", ".bash", ".zsh", ".command", ".tool", ".app", ".appimage", ".run", ".bin",
	".jar", ".py", ".pl", ".rb", ".exe", ".msi", ".bat", ".cmd", ".ps1", ".vbs", ".scpt", ".applescript", ".workflow",
	".terminal", ".webloc", ".inetloc", ".fileloc", ".pkg", ".mpkg", ".dmg", ".deb", ".rpm", ".flatpakref", ".snap", ".service"}

// Target is what to open: the file SavedPath, placed for the user below
// the output folder Root.
type Target struct {
	Root, SavedPath string
	// Folder shows the file's folder instead of opening the file.
	Folder bool
}

// Open checks t and launches the opener on the file or its folder.
// Problems are errors of class invalid (a path outside Root, a link, a
// runnable file) or not found (the file was moved or deleted).
func Open(ctx context.Context, t Target, owners hostpath.Owners, launch Launch) error {
	dir, mode, err := Check(t.Root, t.SavedPath, owners)
	if err != nil {
		return err
	}
	if t.Folder {
		return launch(ctx, dir)
	}
	if mode.Perm()&0o111 != 0 {
		return errdefs.Invalidf("%s is executable: not opened (use Show in folder)", filepath.Base(t.SavedPath))
	}
	if ext := strings.ToLower(filepath.Ext(t.SavedPath)); slices.Contains(runnable, ext) {
		return errdefs.Invalidf("%s is not opened from here: a %s file would run, not show (use Show in folder)", filepath.Base(t.SavedPath), ext)
	}
	return launch(ctx, t.SavedPath)
}

// Check verifies that file is a regular file below root, reached without
// a link, and returns its folder and its mode.
func Check(root, file string, owners hostpath.Owners) (string, fs.FileMode, error) {
	if root == "" || file == "" || !filepath.IsAbs(root) || !filepath.IsAbs(file) {
		return "", 0, errdefs.Invalidf("the task has no saved output to open")
	}
	root = filepath.Clean(root)
	rel, err := filepath.Rel(root, filepath.Clean(file))
	if err != nil || !filepath.IsLocal(rel) {
		return "", 0, errdefs.Invalidf("%s is not in the task's output folder %s", file, root)
	}
	d, err := hostpath.OpenDir(root, owners, false)
	if err != nil {
		return "", 0, outputErr(root, err)
	}
	defer d.Close()
	parent := filepath.Dir(rel)
	in := d.Root
	if parent != "." {
		sub, err := hostpath.Open(d.Root, filepath.ToSlash(parent), owners)
		if err != nil {
			return "", 0, outputErr(root, err)
		}
		defer sub.Close()
		in = sub
	}
	fi, err := in.Lstat(filepath.Base(rel))
	if err != nil {
		return "", 0, outputErr(root, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", 0, errdefs.Invalidf("%s is a link: not opened", file)
	case !fi.Mode().IsRegular():
		return "", 0, errdefs.Invalidf("%s is not a regular file: not opened", file)
	}
	return filepath.Join(d.Path, parent), fi.Mode(), nil
}

// outputErr says what went wrong reaching the output folder or the file.
func outputErr(root string, err error) error {
	if errdefs.Class(err) != nil {
		return err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return errdefs.NotFoundf("the output is no longer in %s (moved or deleted)", root)
	}
	return fmt.Errorf("open the output folder %s: %w", root, err)
}

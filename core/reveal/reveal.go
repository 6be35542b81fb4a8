// Package reveal opens a task's output file on the host, or shows the
// folder it is in, with the desktop's opener (xdg-open on Linux, open on
// macOS). The file's name and contents are the guest's, so before
// anything is opened the path is checked the way output folders are
// (core/hostpath): it must lie below the task's output folder, reached
// from it without a link in any component, through folders the user (or
// root) owns, and be a regular file. A file the opener would run rather
// than show (executable, or a launcher such as .desktop) is shown in its
// folder but never opened: only documents, images and media of known kinds
// are opened (an allowlist, as the terminal gate prefers one: a name the
// list does not know is shown in its folder, not guessed about).
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

// viewable are the extensions the opener is given: documents, images,
// audio and video that desktops show in a viewer. Pages and drawings that
// carry scripts (.html, .svg) and anything unknown are shown in their
// folder instead.
var viewable = []string{".txt", ".md", ".csv", ".tsv", ".json", ".log", ".xml", ".yaml", ".yml",
	".pdf", ".rtf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".odg", ".pages", ".numbers", ".key", ".epub",
	".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".heic", ".avif",
	".mp3", ".m4a", ".wav", ".flac", ".ogg", ".opus", ".aac", ".mp4", ".m4v", ".mov", ".webm", ".mkv", ".avi"}

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
	if ext := strings.ToLower(filepath.Ext(t.SavedPath)); !slices.Contains(viewable, ext) {
		kind := "a " + ext + " file"
		if ext == "" {
			kind = "a file with no extension"
		}
		return errdefs.Invalidf("%s is not opened from here: %s may run or carry scripts rather than show; documents, images and media are opened (use Show in folder)", filepath.Base(t.SavedPath), kind)
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

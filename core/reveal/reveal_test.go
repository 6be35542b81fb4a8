package reveal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/hostpath"
)

// launches records what the opener was asked to open.
type launches []string

func (l *launches) launch(_ context.Context, p string) error {
	*l = append(*l, p)
	return nil
}

func write(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAndShow: a saved output opens, and Show in folder opens its
// folder.
func TestOpenAndShow(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "Report 2026-03-01", "report.pdf")
	write(t, file, 0o644)
	var got launches
	ctx := context.Background()
	if err := Open(ctx, Target{Root: root, SavedPath: file}, hostpath.Self(), got.launch); err != nil {
		t.Fatal(err)
	}
	if err := Open(ctx, Target{Root: root, SavedPath: file, Folder: true}, hostpath.Self(), got.launch); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != file || got[1] != filepath.Dir(file) {
		t.Fatalf("launched %q; want the file, then its folder", got)
	}
}

// TestRefusesWhatTheGuestCouldAimAt: paths outside the output folder
// (named with .., or reached through a link a guest or another program
// left in it), links, special files, executables and launchers are never
// handed to the opener; a moved file is not found.
func TestRefusesWhatTheGuestCouldAimAt(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "id_rsa")
	write(t, secret, 0o600)
	write(t, filepath.Join(root, "task", "run.sh"), 0o644)
	write(t, filepath.Join(root, "task", "tool"), 0o755)
	write(t, filepath.Join(root, "task", "evil.desktop"), 0o644)
	// Names no list of runnable kinds would know: only known documents,
	// images and media are opened.
	for _, n := range []string{"app.jnlp", "page.html", "drawing.svg", "README"} {
		write(t, filepath.Join(root, "task", n), 0o644)
	}
	if err := os.Symlink(secret, filepath.Join(root, "task", "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "via")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "task", "folder.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		saved  string
		folder bool
		class  error
		says   string
	}{
		{filepath.Join(root, "..", filepath.Base(outside), "id_rsa"), false, errdefs.ErrInvalid, "is not in the task's output folder"},
		{secret, true, errdefs.ErrInvalid, "is not in the task's output folder"},
		{filepath.Join(root, "via", "id_rsa"), false, errdefs.ErrInvalid, "link"},
		{filepath.Join(root, "via", "id_rsa"), true, errdefs.ErrInvalid, "link"},
		{filepath.Join(root, "task", "link.txt"), false, errdefs.ErrInvalid, "is a link"},
		{filepath.Join(root, "task", "folder.txt"), false, errdefs.ErrInvalid, "not a regular file"},
		{filepath.Join(root, "task", "tool"), false, errdefs.ErrInvalid, "is executable"},
		{filepath.Join(root, "task", "run.sh"), false, errdefs.ErrInvalid, "a .sh file may run"},
		{filepath.Join(root, "task", "evil.desktop"), false, errdefs.ErrInvalid, "a .desktop file may run"},
		{filepath.Join(root, "task", "app.jnlp"), false, errdefs.ErrInvalid, "a .jnlp file may run"},
		{filepath.Join(root, "task", "page.html"), false, errdefs.ErrInvalid, "a .html file may run or carry scripts"},
		{filepath.Join(root, "task", "drawing.svg"), false, errdefs.ErrInvalid, "a .svg file may run or carry scripts"},
		{filepath.Join(root, "task", "README"), false, errdefs.ErrInvalid, "a file with no extension"},
		{filepath.Join(root, "task", "gone.pdf"), false, errdefs.ErrNotFound, "no longer in"},
		{"", false, errdefs.ErrInvalid, "no saved output"},
		{"task/relative.pdf", false, errdefs.ErrInvalid, "no saved output"},
	} {
		var got launches
		err := Open(context.Background(), Target{Root: root, SavedPath: c.saved, Folder: c.folder}, hostpath.Self(), got.launch)
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s (folder %v): err = %v; want %v saying %q", c.saved, c.folder, err, c.class, c.says)
		}
		if len(got) != 0 {
			t.Errorf("%s: launched %q", c.saved, got)
		}
	}
	// The runnable ones are shown in their folder all the same.
	var got launches
	if err := Open(context.Background(), Target{Root: root, SavedPath: filepath.Join(root, "task", "evil.desktop"), Folder: true}, hostpath.Self(), got.launch); err != nil || len(got) != 1 {
		t.Fatalf("show a launcher's folder: %v %q", err, got)
	}
}

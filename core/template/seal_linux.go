package template

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// sealRootFS makes dst/rootfs the root filesystem a stopped sandbox saw:
// its upper layer (its writes, whiteouts for what it deleted) over the
// template's root filesystem (lower). The two are mounted as a read-only
// overlay and its merged view copied; a file the VM did not change is a
// hard link to the template's (templates never change once built), so a
// sealed template takes the space of the VM's changes only.
func sealRootFS(ctx context.Context, lower, upper, dst string, log io.Writer, track *tracker) error {
	if os.Geteuid() != 0 {
		return errdefs.Unsupportedf("sealing a sandbox needs the helper to run as root (it mounts its layers)")
	}
	for _, p := range []string{lower, upper} {
		if strings.ContainsAny(p, ",:") {
			return fmt.Errorf("cannot mount the layers of %s: the path contains ',' or ':'", p)
		}
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return fmt.Errorf("the VM's layer %s is missing", p)
		}
	}
	mnt := filepath.Join(dst, "seal.mnt")
	out := filepath.Join(dst, "rootfs.partial")
	final := filepath.Join(dst, "rootfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return err
	}
	// Two lower layers and no upper: a read-only overlay that honours the
	// upper layer's whiteouts and opaque folders.
	if err := unix.Mount("overlay", mnt, "overlay", unix.MS_RDONLY, fmt.Sprintf("lowerdir=%s:%s", upper, lower)); err != nil {
		return fmt.Errorf("mount the VM's layers: %w", err)
	}
	defer func() {
		unix.Unmount(mnt, unix.MNT_DETACH)
		os.Remove(mnt)
	}()
	fmt.Fprintf(log, "merged view of %s over %s at %s\n", upper, lower, mnt)
	total, err := countEntries(ctx, mnt)
	if err != nil {
		return err
	}
	c := &treeCopier{ctx: ctx, src: mnt, dst: out, lower: lower, upper: upper, seen: map[uint64]string{}, total: total, track: track}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := c.copyDir("."); err != nil {
		return err
	}
	fmt.Fprintf(log, "%d entries: %d hard links to the parent template, %d copied\n", c.done, c.linked, c.copied)
	return os.Rename(out, final)
}

// unmountLeftovers undoes the mounts an interrupted seal left in a
// template's folder.
func unmountLeftovers(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".mnt") {
			unix.Unmount(filepath.Join(dir, e.Name()), unix.MNT_DETACH)
		}
	}
}

func countEntries(ctx context.Context, root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(_ string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		if n%1000 == 0 {
			return ctx.Err()
		}
		return nil
	})
	return n, err
}

// treeCopier copies a folder tree exactly: types, modes, owners, times,
// extended attributes and hard links; never following a symbolic link.
type treeCopier struct {
	ctx            context.Context
	src, dst       string
	lower, upper   string
	seen           map[uint64]string // inode in src -> first copy, for files with several names
	total, done    int
	linked, copied int
	track          *tracker
}

func (c *treeCopier) tick(rel string) error {
	c.done++
	if c.done%250 == 0 {
		c.track.set(PhaseCopy, float64(c.done)/float64(max(c.total, 1)), rel)
		return c.ctx.Err()
	}
	return nil
}

// copyDir copies the folder rel and what it holds.
func (c *treeCopier) copyDir(rel string) error {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(c.src, rel), &st); err != nil {
		return err
	}
	to := filepath.Join(c.dst, rel)
	if err := os.Mkdir(to, 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(filepath.Join(c.src, rel))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := c.copyEntry(filepath.Join(rel, e.Name())); err != nil {
			return err
		}
	}
	if err := c.tick(rel); err != nil {
		return err
	}
	return c.setMeta(filepath.Join(c.src, rel), to, &st)
}

// copyEntry copies one entry of any type.
func (c *treeCopier) copyEntry(rel string) error {
	from, to := filepath.Join(c.src, rel), filepath.Join(c.dst, rel)
	var st unix.Stat_t
	if err := unix.Lstat(from, &st); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return c.copyDir(rel)
	case unix.S_IFREG:
		if err := c.copyFile(rel, from, to, &st); err != nil {
			return fmt.Errorf("copy %s: %w", rel, err)
		}
	case unix.S_IFLNK:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, to); err != nil {
			return err
		}
		if err := c.setMeta(from, to, &st); err != nil {
			return err
		}
	case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO:
		if err := unix.Mknod(to, st.Mode, int(st.Rdev)); err != nil {
			return fmt.Errorf("create %s: %w", rel, err)
		}
		if err := c.setMeta(from, to, &st); err != nil {
			return err
		}
	default: // sockets belong to processes that are gone
	}
	return c.tick(rel)
}

// copyFile links a file the VM did not change to the template's, else
// copies it (a second name of a copied file becomes a hard link to the
// first copy).
func (c *treeCopier) copyFile(rel, from, to string, st *unix.Stat_t) error {
	if c.unchanged(rel, st) {
		err := os.Link(filepath.Join(c.lower, rel), to)
		if err == nil {
			c.linked++
			return nil
		}
		if !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EMLINK) {
			return err
		}
	}
	if st.Nlink > 1 {
		if first, ok := c.seen[st.Ino]; ok {
			return os.Link(first, to)
		}
		c.seen[st.Ino] = to
	}
	in, err := os.OpenFile(from, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	c.copied++
	return c.setMeta(from, to, st)
}

// unchanged reports whether the merged view's file rel is the template's
// own: the VM's layer has nothing at rel, and the template's file is the
// same inode (overlayfs reports a lower file's own inode number when its
// layers share a file system), size and modification time.
func (c *treeCopier) unchanged(rel string, st *unix.Stat_t) bool {
	var up unix.Stat_t
	if err := unix.Lstat(filepath.Join(c.upper, rel), &up); !errors.Is(err, unix.ENOENT) {
		return false
	}
	var lo unix.Stat_t
	if err := unix.Lstat(filepath.Join(c.lower, rel), &lo); err != nil {
		return false
	}
	return lo.Mode&unix.S_IFMT == unix.S_IFREG && lo.Ino == st.Ino && lo.Size == st.Size &&
		lo.Mtim == st.Mtim && lo.Mode == st.Mode && lo.Uid == st.Uid && lo.Gid == st.Gid
}

// setMeta gives to the owner, mode, extended attributes and times of from
// (st). The mode is set after the owner (chown clears set-id bits).
func (c *treeCopier) setMeta(from, to string, st *unix.Stat_t) error {
	if err := os.Lchown(to, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	if !isLink {
		if err := unix.Fchmodat(unix.AT_FDCWD, to, st.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	copyXattrs(from, to)
	times := []unix.Timespec{st.Atim, st.Mtim}
	return unix.UtimesNanoAt(unix.AT_FDCWD, to, times, unix.AT_SYMLINK_NOFOLLOW)
}

// copyXattrs copies the extended attributes it can (file capabilities,
// user attributes); overlayfs's own are never visible through it.
func copyXattrs(from, to string) {
	size, err := unix.Llistxattr(from, nil)
	if err != nil || size <= 0 {
		return
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(from, buf); err != nil {
		return
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		if name == "" || strings.HasPrefix(name, "trusted.overlay.") {
			continue
		}
		n, err := unix.Lgetxattr(from, name, nil)
		if err != nil || n < 0 {
			continue
		}
		val := make([]byte, n)
		if n, err = unix.Lgetxattr(from, name, val); err != nil {
			continue
		}
		unix.Lsetxattr(to, name, val[:n], 0)
	}
}

package tmplarchive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Kinds of entry an extraction made, by name.
const (
	madeDir = iota + 1
	madeFile
	madeLink
)

// extractor writes disk.tar's entries beneath a target.
type extractor struct {
	ctx  context.Context
	t    Target
	kind string
	// limit is the disk's declared size: no file is larger.
	limit int64
	// made is what the extraction made, by name: a name is made once,
	// and its parent must be a folder it made (so no entry is reached
	// through a link, planted or its own).
	made    map[string]int
	dirs    []dirMeta
	entries int
	buf     []byte
}

// dirMeta is a folder's mode, owner and time, set once it is full.
type dirMeta struct {
	name string
	h    *tar.Header
}

func newExtractor(ctx context.Context, t Target, m Manifest) *extractor {
	return &extractor{ctx: ctx, t: t, kind: m.Kind, limit: m.DiskBytes, made: map[string]int{}, buf: make([]byte, 64<<10)}
}

// run reads disk.tar from r and writes its entries.
func (x *extractor) run(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return readErr(err, "in "+DiskName)
		}
		if x.entries++; x.entries > maxEntries {
			return errdefs.Invalidf("the archive's disk has more than %d entries (refused)", maxEntries)
		}
		if err := x.ctx.Err(); err != nil {
			return err
		}
		if err := x.entry(tr, h); err != nil {
			return err
		}
	}
	if err := x.complete(); err != nil {
		return err
	}
	return x.finishDirs()
}

// entry checks and writes one entry.
func (x *extractor) entry(tr *tar.Reader, h *tar.Header) error {
	name := h.Name
	if h.Typeflag == tar.TypeDir {
		name = strings.TrimSuffix(name, "/")
	}
	if err := checkEntryName(name); err != nil {
		return err
	}
	if err := x.place(name, h.Typeflag); err != nil {
		return err
	}
	if h.Size < 0 || h.Size > x.limit {
		return errdefs.Invalidf("archive entry %q declares %d bytes, more than the whole disk's %d: a size that lies (refused)", clip(name), h.Size, x.limit)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := x.t.Root.Mkdir(name, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		x.made[name] = madeDir
		x.dirs = append(x.dirs, dirMeta{name, h})
		return nil
	case tar.TypeReg, tar.TypeRegA:
		if err := x.file(tr, name, h); err != nil {
			return err
		}
		x.made[name] = madeFile
		return nil
	case tar.TypeSymlink:
		target := h.Linkname
		if target == "" || len(target) > maxNameBytes || strings.ContainsRune(target, 0) {
			return errdefs.Invalidf("archive entry %q: a symbolic link with an empty or overlong target (refused)", clip(name))
		}
		// The guest's own link: made as it is, never followed here (no
		// later entry may go through it).
		if err := x.t.Root.Symlink(target, name); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		x.made[name] = madeLink
		return x.owner(name, h, true)
	case tar.TypeLink:
		first := h.Linkname
		if err := checkEntryName(first); err != nil {
			return errdefs.Invalidf("archive entry %q is a hard link to %q, outside the archive (refused)", clip(name), clip(first))
		}
		if x.made[first] != madeFile {
			return errdefs.Invalidf("archive entry %q is a hard link to %q, which is not a file this archive wrote before it (refused)", clip(name), clip(first))
		}
		if err := x.t.Root.Link(first, name); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
		x.made[name] = madeFile
		return nil
	}
	return errdefs.Invalidf("archive entry %q is %s: not carried in a template (refused)", clip(name), kindOf(h.Typeflag))
}

// place checks that name may be made: the archive's kind allows it, it was
// not made before, and its parent is a folder the archive made.
func (x *extractor) place(name string, typ byte) error {
	if x.made[name] != 0 {
		return errdefs.Invalidf("archive entry %q comes twice (refused)", clip(name))
	}
	switch x.kind {
	case KindMacOS:
		if !slices.ContainsFunc(BundleFiles(), func(f BundleFile) bool { return f.Name == name }) {
			return errdefs.Invalidf("archive entry %q is not a file of a macOS bundle (refused)", clip(name))
		}
		if typ != tar.TypeReg && typ != tar.TypeRegA {
			return errdefs.Invalidf("archive entry %q is %s: a macOS bundle carries regular files only (refused)", clip(name), kindOf(typ))
		}
		return nil
	case KindRootFS:
		if name == "rootfs" {
			if typ != tar.TypeDir {
				return errdefs.Invalidf("archive entry rootfs is %s, not a folder (refused)", kindOf(typ))
			}
			return nil
		}
		if !strings.HasPrefix(name, "rootfs/") {
			return errdefs.Invalidf("archive entry %q is outside rootfs/ (refused)", clip(name))
		}
	default:
		return errdefs.Unsupportedf("templates of kind %q are not imported", x.kind)
	}
	parent := path.Dir(name)
	switch x.made[parent] {
	case madeDir:
		return nil
	case madeLink:
		return errdefs.Invalidf("archive entry %q goes through the symbolic link %q: links are never followed (refused)", clip(name), clip(parent))
	case madeFile:
		return errdefs.Invalidf("archive entry %q is inside %q, which is a file (refused)", clip(name), clip(parent))
	}
	return errdefs.Invalidf("archive entry %q comes before its folder %q (refused)", clip(name), clip(parent))
}

// file writes a regular file: zero blocks are left as holes.
func (x *extractor) file(tr *tar.Reader, name string, h *tar.Header) error {
	f, err := x.t.Root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	defer f.Close()
	var off int64
	for off < h.Size {
		n := int(min(int64(len(x.buf)), h.Size-off))
		if _, err := io.ReadFull(tr, x.buf[:n]); err != nil {
			return readErr(err, "in "+name)
		}
		if !allZero(x.buf[:n]) {
			if _, err := f.WriteAt(x.buf[:n], off); err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
		}
		off += int64(n)
		if off%(64<<20) == 0 {
			if err := x.ctx.Err(); err != nil {
				return err
			}
		}
	}
	if err := f.Truncate(h.Size); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := x.fileOwner(f, h); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := f.Chmod(mode(h)); err != nil {
		return err
	}
	return x.t.Root.Chtimes(name, h.ModTime, h.ModTime)
}

var zeroBlock = make([]byte, 64<<10)

func allZero(p []byte) bool { return bytes.Equal(p, zeroBlock[:len(p)]) }

// mode is an entry's permissions without set-id bits (the sticky bit
// stays: /tmp-like folders need it).
func mode(h *tar.Header) fs.FileMode {
	m := fs.FileMode(h.Mode & 0o777)
	if h.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// uidOf is the owner an entry gets.
func (x *extractor) uidOf(h *tar.Header) (int, int) {
	if h.Uname == guestName && x.t.Guest != nil {
		return x.t.Guest.UID, x.t.Guest.GID
	}
	return 0, 0
}

func (x *extractor) fileOwner(f *os.File, h *tar.Header) error {
	if !x.t.Chown {
		return nil
	}
	uid, gid := x.uidOf(h)
	return f.Chown(uid, gid)
}

// owner gives a folder or link its owner.
func (x *extractor) owner(name string, h *tar.Header, link bool) error {
	if !x.t.Chown {
		return nil
	}
	uid, gid := x.uidOf(h)
	if link {
		return x.t.Root.Lchown(name, uid, gid)
	}
	return x.t.Root.Chown(name, uid, gid)
}

// complete checks that a macOS bundle has its required files.
func (x *extractor) complete() error {
	if x.kind == KindRootFS && x.made["rootfs"] != madeDir {
		return errdefs.Invalidf("the archive's disk has no rootfs folder")
	}
	if x.kind == KindMacOS {
		for _, f := range BundleFiles() {
			if f.Required && x.made[f.Name] == 0 {
				return errdefs.Invalidf("the archive's macOS bundle lacks %s", f.Name)
			}
		}
	}
	return nil
}

// finishDirs sets the folders' owners, modes and times, deepest first.
func (x *extractor) finishDirs() error {
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		if err := x.owner(d.name, d.h, false); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		if err := x.t.Root.Chmod(d.name, mode(d.h)); err != nil {
			return err
		}
		t := d.h.ModTime
		if t.IsZero() {
			t = time.Now()
		}
		if err := x.t.Root.Chtimes(d.name, t, t); err != nil {
			return err
		}
	}
	return nil
}

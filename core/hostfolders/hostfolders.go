// Package hostfolders lets a task work on folders of this computer without
// giving the guest the host's files (issue 20). A granted folder is copied
// into the VM's shared folder (folders/NAME) when the task starts, with a
// manifest of what it held (each file's size, mode and SHA-256); the agent
// works on the copy. When the task ends, with the VM stopped, the copy is
// compared with the manifest: the files added, modified and deleted are the
// changes the user reviews. Nothing reaches the host folder until the user
// approves a change, and Apply writes it through an os.Root of the folder
// after checking that the host file is still as the task found it (a
// conflict otherwise, never an overwrite).
//
// Threats answered: a guest that puts a link, a FIFO or a device in the
// copy (refused, never followed or opened blocking), that names a path
// outside the folder (the copy is read and the folder written through
// os.Root), that changes a hidden file of the folder (.git/config,
// .envrc, .vscode/: a later command on the host could run what it wrote;
// refused, as hidden outputs are), that marks a file executable (new files
// are written 0644, changed ones keep the host file's mode), or that fills
// the copy (the review copies at most Limits). A folder is taken at its
// real path, through links the user or root made only, and may not be, be
// inside or hold the helper's data folder or the VM's shared folder,
// compared by device and inode (hostpath.Fence) when it is granted, staged
// and written to: a symlinked parent cannot hand a task Sessions/, nor make
// staging copy a folder into itself.
//
// The copy is a copy, not a mount: a warm VM is running before its task
// exists (a bind mount cannot be added to a running sandbox), and the guest
// never sees the host folder itself, not even read-only.
package hostfolders

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/hostpath"
)

// Sub is where the granted folders are in the VM's shared folder.
const Sub = "folders"

// Limits cap a granted folder: what is copied in, and what the review
// copies out.
type Limits struct {
	MaxFiles int
	MaxBytes int64
}

// Default limits.
const (
	DefaultMaxFiles = 10000
	DefaultMaxBytes = 1 << 30
)

func (l Limits) withDefaults() Limits {
	l.MaxFiles = cmp.Or(l.MaxFiles, DefaultMaxFiles)
	l.MaxBytes = cmp.Or(l.MaxBytes, DefaultMaxBytes)
	return l
}

// Grant is a host folder given to a task.
type Grant struct {
	// Name is the folder's name in the guest: shared/folders/NAME.
	Name string `json:"name"`
	// Path is the host folder, absolute.
	Path string `json:"path"`
}

// Grants checks the folders a task is given and names them (by their base
// names, made unique): each must be an absolute path of an existing folder,
// not a link, and none inside another. Each is taken at its real path, the
// links on the way followed only if owners (or root) made them, and
// compared with the others and with fence (the helper's data folder) by
// that path and by device and inode: a folder that is, is inside or holds
// a fenced one is refused, whatever links led to it.
func Grants(paths []string, owners hostpath.Owners, fence hostpath.Fence) ([]Grant, error) {
	var out []Grant
	for _, p := range paths {
		p, err := grantPath(p, owners, fence)
		if err != nil {
			return nil, err
		}
		for _, g := range out {
			if within(p, g.Path) || within(g.Path, p) {
				return nil, errdefs.Invalidf("host folders %s and %s overlap: give one", g.Path, p)
			}
		}
		name := safeName(filepath.Base(p))
		for n := 2; slices.ContainsFunc(out, func(g Grant) bool { return g.Name == name }); n++ {
			name = fmt.Sprintf("%s-%d", safeName(filepath.Base(p)), n)
		}
		out = append(out, Grant{Name: name, Path: p})
	}
	return out, nil
}

// grantPath checks one granted folder and returns its real path.
func grantPath(p string, owners hostpath.Owners, fence hostpath.Fence) (string, error) {
	if !filepath.IsAbs(p) {
		return "", errdefs.Invalidf("host folder %q: want an absolute path", p)
	}
	p = filepath.Clean(p)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", errdefs.Invalidf("host folder %s does not exist", p)
	case err != nil:
		return "", errdefs.Invalidf("host folder %s: %v", p, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", errdefs.Invalidf("host folder %s is a symbolic link: give the folder it points to", p)
	case !fi.IsDir():
		return "", errdefs.Invalidf("host folder %s is not a folder", p)
	}
	real, err := hostpath.Resolve(p, owners)
	if err != nil {
		return "", fmt.Errorf("host folder: %w", err)
	}
	if real == "/" {
		return "", errdefs.Invalidf("the root folder cannot be given to a task")
	}
	chain, err := hostpath.Chain(real)
	if err != nil {
		return "", errdefs.Invalidf("host folder %s: %v", p, err)
	}
	return real, fence.Check("host folder "+p, chain)
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// safeName is a folder name the guest can show: printable, not hidden.
func safeName(s string) string {
	s = strings.TrimLeft(s, ".")
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			r = '_'
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "folder"
	}
	return b.String()
}

// Entry is a file of a folder.
type Entry struct {
	Size   int64       `json:"size"`
	SHA256 string      `json:"sha256"`
	Mode   fs.FileMode `json:"mode"`
}

// Manifest is what a granted folder held when the task started.
type Manifest struct {
	Grant
	// Files are the regular files copied, by slash-separated path.
	Files map[string]Entry `json:"files"`
	// Skipped are the entries not copied (links, special files), with why.
	Skipped []string `json:"skipped,omitempty"`
}

// Stage copies g's regular files and folders into shared/folders/NAME,
// owned like the shared folder, and returns the manifest. Links and special
// files are not copied (the manifest says so). A folder over the limits is
// refused whole: a partial copy would read as deletions. The folder is
// checked again against fence and the shared folder itself, as it is now
// (a link on its path may have changed since the task was submitted), and
// every folder below it too: one of them, met by its device and inode (a
// bind mount, say), stops the copy before anything of it is read.
func Stage(ctx context.Context, g Grant, shared string, lim Limits, fence hostpath.Fence) (Manifest, error) {
	lim = lim.withDefaults()
	m := Manifest{Grant: g, Files: map[string]Entry{}}
	fence, err := fence.With(hostpath.Folder{Name: "the VM's shared folder", Path: shared})
	if err != nil {
		return m, err
	}
	src, err := os.OpenRoot(g.Path)
	if err != nil {
		return m, fmt.Errorf("open host folder %s: %w", g.Path, err)
	}
	defer src.Close()
	chain, err := hostpath.ChainOf(src, g.Path)
	if err == nil {
		err = fence.Check("host folder "+g.Path, chain)
	}
	if err != nil {
		return m, err
	}
	dst, owner, err := files.OpenSharedSub(shared, path.Join(Sub, g.Name), 0o755)
	if err != nil {
		return m, err
	}
	defer dst.Close()
	var total int64
	err = fs.WalkDir(src.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		switch {
		case name == ".":
			return nil
		case d.IsDir():
			if err := fenced(fence, g, name, d); err != nil {
				return err
			}
			if err := dst.Mkdir(name, 0o755); err != nil {
				return err
			}
			return owner.Give(dst, name)
		case !d.Type().IsRegular():
			m.Skipped = append(m.Skipped, files.Printable(name)+" (not a regular file: not copied)")
			return nil
		case len(m.Files) >= lim.MaxFiles:
			return errdefs.TooLargef("host folder %s has over %d files: give a smaller folder", g.Path, lim.MaxFiles)
		}
		e, err := copyFile(src, name, dst, name, 0o644|modeX(d), lim.MaxBytes-total)
		if err != nil {
			if errors.Is(err, errdefs.ErrTooLarge) {
				return errdefs.TooLargef("host folder %s is over %d MB: give a smaller folder", g.Path, lim.MaxBytes>>20)
			}
			return fmt.Errorf("copy %s: %w", name, err)
		}
		total += e.Size
		m.Files[name] = e
		return owner.Give(dst, name)
	})
	return m, err
}

// fenced refuses the folder name of g's folder when it is one of fence's.
func fenced(fence hostpath.Fence, g Grant, name string, d fs.DirEntry) error {
	fi, err := d.Info()
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if id, ok := hostpath.IDOf(fi); ok {
		if f, ok := fence.Holds(id); ok {
			return errdefs.Invalidf("host folder %s holds %s (%s, at %s): it cannot be given to a task", g.Path, f.Name, f.Path, files.Printable(name))
		}
	}
	return nil
}

// modeX is the executable bits of a file (a script stays runnable in the
// guest's copy).
func modeX(d fs.DirEntry) fs.FileMode {
	if fi, err := d.Info(); err == nil {
		return fi.Mode().Perm() & 0o111
	}
	return 0
}

// copyFile copies one regular file of from (opened without following a
// link or blocking) into a new file of to, at most room bytes, and returns
// its size, mode and hash.
func copyFile(from *os.Root, name string, to *os.Root, dst string, perm fs.FileMode, room int64) (Entry, error) {
	in, fi, err := openRegular(from, name)
	if err != nil {
		return Entry{}, err
	}
	defer in.Close()
	if fi.Size() > room {
		return Entry{}, errdefs.TooLargef("%d bytes, over the %d left", fi.Size(), max(room, 0))
	}
	out, err := to.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return Entry{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(in, room+1))
	if err == nil && n > room {
		err = errdefs.TooLargef("grew over the %d bytes left while copying", room)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		to.Remove(dst)
		return Entry{}, err
	}
	return Entry{Size: n, SHA256: sum(h), Mode: fi.Mode().Perm()}, nil
}

func sum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// openRegular opens name in root for reading if it is a regular file.
func openRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, files.ReadUntrusted, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// hashFile hashes a regular file of root.
func hashFile(root *os.Root, name string) (Entry, error) {
	f, fi, err := openRegular(root, name)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Size: n, SHA256: sum(h), Mode: fi.Mode().Perm()}, nil
}

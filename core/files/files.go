// Package files moves work in and out of a VM's shared folder: task inputs
// are copied into inbox/ before the agent starts, and after the task the
// regular files in outbox/ are collected into the session's artifacts and
// then placed in the output directory under collision-safe names.
// Collection never follows a symbolic link and never reads outside the
// outbox: it walks the outbox through an os.Root, skips everything that is
// not a regular file, and copies at most the size caps allow.
package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Folder names inside a VM's shared folder.
const (
	Inbox     = "inbox"
	Outbox    = "outbox"
	Workspace = "workspace"
)

// Default size caps.
const (
	DefaultMaxFileBytes = 1 << 30 // 1 GiB per file
	DefaultMaxTaskBytes = 4 << 30 // 4 GiB per task
	DefaultMaxFiles     = 1000
)

// CheckName validates a file name given by a user or a guest: one path
// element, valid UTF-8, no control characters, at most 255 bytes. It
// returns the name unchanged or an error of class invalid.
func CheckName(name string) (string, error) {
	switch {
	case name == "", name == ".", name == "..":
		return "", errdefs.Invalidf("file name %q is not allowed", name)
	case len(name) > 255:
		return "", errdefs.Invalidf("file name is %d bytes, over the 255-byte limit", len(name))
	case !utf8.ValidString(name):
		return "", errdefs.Invalidf("file name %q is not valid UTF-8", name)
	case strings.ContainsAny(name, `/\`):
		return "", errdefs.Invalidf("file name %q must not contain a path separator", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "", errdefs.Invalidf("file name %q contains a control character", name)
		}
	}
	return name, nil
}

// MimeType guesses a file's type from its name.
func MimeType(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Owner says who must own what is put in a shared folder (the sandbox's
// account when the helper runs as root); -1 leaves ownership alone.
type Owner struct{ UID, GID int }

// OwnerOf returns the owner of dir.
func OwnerOf(dir string) (Owner, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return Owner{-1, -1}, fmt.Errorf("stat %s: %w", dir, err)
	}
	return ownerOf(fi), nil
}

// Input is a file to put in a VM's inbox.
type Input struct {
	Name string // as the task lists it
	Path string // where its bytes are on the host
}

// CopyIn copies inputs into shared/inbox, owned like the shared folder.
func CopyIn(shared string, inputs []Input) error {
	owner, err := OwnerOf(shared)
	if err != nil {
		return err
	}
	inbox := filepath.Join(shared, Inbox)
	if err := os.MkdirAll(inbox, 0o700); err != nil {
		return fmt.Errorf("create inbox: %w", err)
	}
	if err := chown(inbox, owner); err != nil {
		return err
	}
	for _, in := range inputs {
		if _, err := CheckName(in.Name); err != nil {
			return err
		}
		dst := filepath.Join(inbox, in.Name)
		if err := copyFile(in.Path, dst, -1); err != nil {
			return fmt.Errorf("copy %s into the inbox: %w", in.Name, err)
		}
		if err := chown(dst, owner); err != nil {
			return err
		}
	}
	return nil
}

// Limits cap what Collect copies.
type Limits struct {
	MaxFileBytes int64
	MaxTaskBytes int64
	MaxFiles     int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxTaskBytes <= 0 {
		l.MaxTaskBytes = DefaultMaxTaskBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// Collected is a file copied out of the outbox.
type Collected struct {
	// Name is the path inside the outbox, slash-separated ("report.pdf",
	// "charts/q3.png").
	Name string
	Size int64
	// Path is the copy's absolute path.
	Path string
}

// Skipped is an outbox entry that was not copied, and why.
type Skipped struct {
	Name   string
	Reason string
	// TooLarge says a size or count cap left it out.
	TooLarge bool
}

// Collect copies the regular files under outbox into dest (keeping their
// relative paths) and reports what it skipped: symbolic links, devices,
// sockets and files over the caps. A missing outbox collects nothing.
func Collect(outbox, dest string, lim Limits) ([]Collected, []Skipped, error) {
	lim = lim.withDefaults()
	root, err := os.OpenRoot(outbox)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open outbox: %w", err)
	}
	defer root.Close()
	var (
		got     []Collected
		skipped []Skipped
		total   int64
	)
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			skipped = append(skipped, Skipped{Name: name, Reason: err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if name == "." {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			skipped = append(skipped, Skipped{Name: name, Reason: "symbolic link (never followed)"})
			return nil
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			skipped = append(skipped, Skipped{Name: name, Reason: "not a regular file"})
			return nil
		case len(got) >= lim.MaxFiles:
			skipped = append(skipped, Skipped{Name: name, Reason: fmt.Sprintf("over the limit of %d files", lim.MaxFiles), TooLarge: true})
			return nil
		}
		n, err := copyFromRoot(root, name, filepath.Join(dest, filepath.FromSlash(name)), lim.MaxFileBytes, lim.MaxTaskBytes-total)
		if err != nil {
			skipped = append(skipped, Skipped{Name: name, Reason: err.Error(), TooLarge: errors.Is(err, errdefs.ErrTooLarge)})
			return nil
		}
		total += n
		got = append(got, Collected{Name: name, Size: n, Path: filepath.Join(dest, filepath.FromSlash(name))})
		return nil
	})
	return got, skipped, err
}

// copyFromRoot copies one regular file out of root, refusing it if it is
// larger than maxFile or than the room left.
func copyFromRoot(root *os.Root, name, dst string, maxFile, room int64) (int64, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return 0, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return 0, errors.New("not a regular file")
	}
	limit := min(maxFile, room)
	switch {
	case fi.Size() > maxFile:
		return 0, errdefs.TooLargef("%d bytes, over the per-file cap of %d bytes", fi.Size(), maxFile)
	case fi.Size() > room:
		return 0, errdefs.TooLargef("%d bytes, over the %d bytes left of the per-task cap", fi.Size(), max(room, 0))
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, fmt.Errorf("create folder: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("create copy: %w", err)
	}
	// The guest may still write: never copy more than the cap.
	n, err := io.Copy(out, io.LimitReader(f, limit+1))
	if err == nil && n > limit {
		err = errdefs.TooLargef("grew over the cap of %d bytes while copying", limit)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return 0, err
	}
	return n, nil
}

// Put puts src at dst, a new file: moved when move is set and both are
// on one filesystem, else copied (mode 0600, synced).
func Put(src, dst string, move bool) error {
	if move {
		if err := os.Rename(src, dst); err == nil {
			return nil
		}
	}
	return copyFile(src, dst, -1)
}

// copyFile copies src to a new file dst (mode 0600), at most max bytes when
// max >= 0.
func copyFile(src, dst string, max int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	var r io.Reader = in
	if max >= 0 {
		r = io.LimitReader(in, max)
	}
	_, err = io.Copy(out, r)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Place copies collected files into dir (created if needed) and returns
// the paths it wrote. A name that is taken gets " (1)", " (2)"… before its
// extension; nothing existing is overwritten.
func Place(dir string, collected []Collected) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	var out []string
	for _, c := range collected {
		dst, f, err := createUnique(filepath.Join(dir, filepath.FromSlash(c.Name)))
		if err != nil {
			return out, fmt.Errorf("place %s: %w", c.Name, err)
		}
		err = copyInto(c.Path, f)
		if err != nil {
			os.Remove(dst)
			return out, fmt.Errorf("place %s: %w", c.Name, err)
		}
		out = append(out, dst)
	}
	return out, nil
}

// createUnique creates a new file at want, or at want with " (n)" added.
func createUnique(want string) (string, *os.File, error) {
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		return "", nil, err
	}
	ext := filepath.Ext(want)
	base := strings.TrimSuffix(want, ext)
	for n := 0; n < 10000; n++ {
		p := want
		if n > 0 {
			p = fmt.Sprintf("%s (%d)%s", base, n, ext)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return p, f, nil
	}
	return "", nil, fmt.Errorf("no free name for %s", want)
}

func copyInto(src string, out *os.File) error {
	in, err := os.Open(src)
	if err != nil {
		out.Close()
		return err
	}
	defer in.Close()
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

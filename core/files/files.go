// Package files moves work in and out of a VM's shared folder: task inputs
// are copied into inbox/ before the agent starts, and after the task the
// regular files in outbox/ are collected into the session's artifacts and
// then placed in the output directory under collision-safe names.
// Collection never follows a symbolic link and never reads outside the
// outbox: it walks the outbox through an os.Root, skips everything that is
// not a regular file, and copies at most the size caps allow. The output
// folder is opened, not named (OpenOutputFolder, with core/hostpath): from
// / down without following a link, each folder the user's or root's, and
// checked again when the outputs are placed, so a link or a folder another
// local user puts in its place gets nothing. Inputs go into the shared
// folder the same way: a link the guest made there is never followed.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/hostpath"
	"github.com/hivecrew/hivecrew/core/redact"
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
func CopyIn(shared string, inputs []Input) error { return CopyInto(shared, Inbox, inputs) }

// CopyInto copies inputs into the folder sub of shared (created 0700),
// owned like the shared folder. The guest (a template's code) may have run
// before: a link it made in place of sub, or of an input's name, is not
// followed; an entry of an input's name is replaced, never written
// through.
func CopyInto(shared, sub string, inputs []Input) error {
	dir, owner, err := OpenSharedSub(shared, sub, 0o700)
	if err != nil {
		return err
	}
	defer dir.Close()
	for _, in := range inputs {
		if _, err := CheckName(in.Name); err != nil {
			return err
		}
		if err := copyIn(in.Path, dir, in.Name); err != nil {
			return fmt.Errorf("copy %s into %s: %w", in.Name, sub, err)
		}
		if err := owner.Give(dir, in.Name); err != nil {
			return err
		}
	}
	return nil
}

// copyIn copies the host file src to a new file name (0600) of dir, in
// place of whatever the guest left there.
func copyIn(src string, dir *os.Root, name string) error {
	if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace what is there: %w", err)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	return copyAndClose(out, in)
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
	// Name is the entry's path in the outbox, with any character that is
	// not safe to show escaped (see Printable).
	Name   string
	Reason string
	// TooLarge says a size or count cap left it out.
	TooLarge bool
}

// MaxSkippedListed is how many skipped entries a collection names; the
// rest are counted only (a guest can make any number of them).
const MaxSkippedListed = 10

// Collection is what Collect copied and what it left out.
type Collection struct {
	Collected []Collected
	// Skipped names the first MaxSkippedListed entries left out;
	// SkippedCount counts them all.
	Skipped      []Skipped
	SkippedCount int
}

func (c *Collection) skip(name, reason string, tooLarge bool) {
	c.SkippedCount++
	if len(c.Skipped) < MaxSkippedListed {
		c.Skipped = append(c.Skipped, Skipped{Name: Printable(name), Reason: reason, TooLarge: tooLarge})
	}
}

// CheckOutputName checks a path the guest gave an outbox entry
// (slash-separated): each element must be a valid name (CheckName), not
// hidden (a leading dot: .bashrc, .ssh/, .config/autostart/), and free of
// invisible formatting characters (bidirectional overrides such as U+202E,
// zero-width characters), which make a name read as something else.
func CheckOutputName(rel string) error {
	for _, elem := range strings.Split(rel, "/") {
		if _, err := CheckName(elem); err != nil {
			return err
		}
		if strings.HasPrefix(elem, ".") {
			return errdefs.Invalidf("%q is hidden (starts with a dot)", Printable(elem))
		}
		for _, r := range elem {
			if unicode.Is(unicode.Cf, r) {
				return errdefs.Invalidf("%q contains the invisible formatting character %U", Printable(elem), r)
			}
		}
	}
	return nil
}

// Printable is redact.Printable, the one printable filter: a guest's name
// can be put in a summary, a log or a terminal without acting on it.
func Printable(s string) string { return redact.Printable(s) }

// PrintableText is redact.PrintableText, for text of several lines.
func PrintableText(s string) string { return redact.PrintableText(s) }

// Collect copies the regular files under outbox into dest (keeping their
// relative paths) and reports what it skipped: the outbox itself when the
// guest made it a link (its parent, the shared folder, is the host's),
// symbolic links, devices,
// FIFOs, sockets, hidden or unsafely named entries (whole folders of them)
// and files over the caps, which count only the files collected. A
// missing outbox collects nothing. Collection stops when ctx ends (what
// was copied by then is kept). The guest must not run meanwhile (the
// caller stops the VM first); even so, every file is opened without
// blocking, without following a link, and checked by its open descriptor.
// Caps count a file's apparent size, so a sparse file counts in full.
func Collect(ctx context.Context, outbox, dest string, lim Limits) (Collection, error) {
	lim = lim.withDefaults()
	var c Collection
	root, err := OpenShared(filepath.Dir(outbox), filepath.Base(outbox))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case errors.Is(err, errdefs.ErrInvalid):
		// The guest made the outbox a link (to a host folder, say).
		c.skip(filepath.Base(outbox), err.Error(), false)
		return c, nil
	case err != nil:
		return c, fmt.Errorf("open outbox: %w", err)
	}
	defer root.Close()
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			c.skip(name, err.Error(), false)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if name == "." {
			return nil
		}
		if err := CheckOutputName(name); err != nil {
			c.skip(name, err.Error(), false)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			c.skip(name, "symbolic link (never followed)", false)
			return nil
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			c.skip(name, "not a regular file", false)
			return nil
		case len(c.Collected) >= lim.MaxFiles:
			c.skip(name, fmt.Sprintf("over the limit of %d files", lim.MaxFiles), true)
			return nil
		}
		dst := filepath.Join(dest, filepath.FromSlash(name))
		n, err := copyFromRoot(ctx, root, name, dst, lim.MaxFileBytes, lim.MaxTaskBytes-total)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			c.skip(name, err.Error(), errors.Is(err, errdefs.ErrTooLarge))
			return nil
		}
		total += n
		c.Collected = append(c.Collected, Collected{Name: name, Size: n, Path: dst})
		return nil
	})
	return c, err
}

// copyFromRoot copies one regular file out of root, refusing it if it is
// larger than maxFile or than the room left.
func copyFromRoot(ctx context.Context, root *os.Root, name, dst string, maxFile, room int64) (int64, error) {
	// O_NONBLOCK: a FIFO put in a regular file's place opens at once (and
	// is refused below) instead of blocking until a writer comes.
	f, err := root.OpenFile(name, os.O_RDONLY|noFollow|nonBlock, 0)
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
	n, err := io.Copy(out, io.LimitReader(ctxReader{ctx, f}, limit+1))
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

// ctxReader stops reading once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Put puts src at dst, a new file: moved when move is set and both are
// on one filesystem, else copied (mode 0600, synced).
func Put(src, dst string, move bool) error {
	if move {
		if err := os.Rename(src, dst); err == nil {
			return nil
		}
	}
	return copyFile(src, dst)
}

// copyFile copies src to a new file dst (mode 0600).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	return copyAndClose(out, in)
}

// Place copies collected files into out, an output folder opened with
// hostpath.OpenDir, and returns the paths it wrote. A name that is taken
// gets " (1)", " (2)"… before its extension ("notes (1)" without one);
// nothing existing is overwritten. The folders made for the files are
// made through out without following a link in any element, and one that
// owners (or root) do not own is refused. Files are written 0644 (never
// executable) and stay the helper's: nothing is given to another user.
func Place(out *hostpath.Dir, owners hostpath.Owners, collected []Collected) ([]string, error) {
	var placed []string
	for _, c := range collected {
		p, err := placeOne(out, owners, c)
		if err != nil {
			return placed, fmt.Errorf("place %s: %w", c.Name, err)
		}
		placed = append(placed, p)
	}
	return placed, nil
}

func placeOne(out *hostpath.Dir, owners hostpath.Owners, c Collected) (string, error) {
	dir, base := path.Split(c.Name)
	sub, err := hostpath.Sub(out.Root, dir, 0o755, owners)
	if err != nil {
		return "", err
	}
	defer sub.Close()
	name, f, err := createUnique(base, func(n string) (*os.File, error) {
		return sub.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o644)
	})
	if err != nil {
		return "", err
	}
	in, err := os.Open(c.Path)
	if err == nil {
		err = copyAndClose(f, in)
		in.Close()
	} else {
		f.Close()
	}
	if err != nil {
		sub.Remove(name)
		return "", err
	}
	return filepath.Join(out.Path, filepath.FromSlash(dir), name), nil
}

// CreateUnique creates want, or "want (1)"… when that is taken (before its
// extension), without replacing anything, and returns the path and file.
func CreateUnique(want string) (string, *os.File, error) {
	return createUnique(want, func(p string) (*os.File, error) {
		return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	})
}

// createUnique creates want with create, or want with " (n)" added when
// create says it exists.
func createUnique(want string, create func(string) (*os.File, error)) (string, *os.File, error) {
	ext := filepath.Ext(want)
	base := strings.TrimSuffix(want, ext)
	for n := 0; n < 10000; n++ {
		p := want
		if n > 0 {
			p = fmt.Sprintf("%s (%d)%s", base, n, ext)
		}
		f, err := create(p)
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

// copyAndClose copies in to out, syncs and closes out.
func copyAndClose(out *os.File, in io.Reader) error {
	_, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

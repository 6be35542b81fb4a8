//go:build unix

package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// maxLinks is how many links Resolve follows, as the kernel's limit.
const maxLinks = 40

// Owners are the users whose folders and links a path may go through;
// root is always one of them.
type Owners []int

// Self is the helper's own user.
func Self() Owners { return Owners{os.Geteuid()} }

// Trusts reports whether uid is one of o or root.
func (o Owners) Trusts(uid int) bool { return uid == 0 || slices.Contains(o, uid) }

// ID is a folder's identity: its device and inode.
type ID struct{ Dev, Ino uint64 }

// IDOf is the identity of what fi describes (false when the platform
// says nothing of it).
func IDOf(fi fs.FileInfo) (ID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}, false
	}
	return ID{uint64(st.Dev), uint64(st.Ino)}, true // Dev is an int32 on darwin
}

// ownerOf is the user that owns what fi describes (-1 if unknown).
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func statID(st *unix.Stat_t) ID { return ID{uint64(st.Dev), uint64(st.Ino)} }

// Resolve returns the real path of p (absolute): each symbolic link on
// the way is followed only when one of owners (or root) made it, so a link
// another user planted is refused (an error of class invalid), however
// deep. From the first component that does not exist the rest is kept as
// given: it does not exist yet.
func Resolve(p string, owners Owners) (string, error) {
	if !filepath.IsAbs(p) {
		return "", errdefs.Invalidf("%s: want an absolute path", p)
	}
	todo := split(p)
	real, links := "/", 0
	for len(todo) > 0 {
		e := todo[0]
		todo = todo[1:]
		switch e {
		case ".":
			continue
		case "..":
			real = filepath.Dir(real)
			continue
		}
		next := filepath.Join(real, e)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return filepath.Join(append([]string{next}, todo...)...), nil
		case err != nil:
			return "", fmt.Errorf("resolve %s: %w", p, err)
		case fi.Mode()&fs.ModeSymlink == 0:
			real = next
			continue
		}
		if uid := ownerOf(fi); !owners.Trusts(uid) {
			return "", errdefs.Invalidf("%s is a symbolic link made by another user (uid %d): it is not followed", next, uid)
		}
		if links++; links > maxLinks {
			return "", errdefs.Invalidf("%s: too many symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		if filepath.IsAbs(target) {
			real = "/"
		}
		todo = append(split(target), todo...)
	}
	return real, nil
}

// split is the elements of a slash-separated path, without empty ones.
func split(p string) []string {
	return slices.DeleteFunc(strings.Split(p, "/"), func(e string) bool { return e == "" })
}

// Dir is a folder opened by OpenDir.
type Dir struct {
	// Root is the folder: what is written through it stays in it.
	*os.Root
	// Path is the folder's real path.
	Path string
	// Chain is the folder's identity and its parents', the folder first
	// and / last.
	Chain []ID
}

// OpenDir opens dir (absolute and clean) from / down, one component at a
// time without following a link (O_NOFOLLOW), and refuses a component that
// is a link, not a folder, or a folder that neither owners nor root own
// (errors of class invalid, saying which). With create, the folders that
// are missing are made (0755, the helper's own). The os.Root returned is
// checked to be the folder walked, by device and inode.
func OpenDir(dir string, owners Owners, create bool) (*Dir, error) {
	fd, chain, missing, err := walk(dir, owners, create)
	if err != nil {
		return nil, err
	}
	if missing != "" {
		return nil, fmt.Errorf("open %s: %w", missing, fs.ErrNotExist)
	}
	defer unix.Close(fd)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if err := same(root, chain[0]); err != nil {
		root.Close()
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &Dir{Root: root, Path: dir, Chain: chain}, nil
}

// CheckDir makes OpenDir's checks of the components of dir that exist, and
// returns the identities of the deepest of them and its parents (dir's own
// chain when whole) and whether dir exists.
func CheckDir(dir string, owners Owners) (chain []ID, whole bool, err error) {
	fd, chain, missing, err := walk(dir, owners, false)
	if err != nil {
		return nil, false, err
	}
	unix.Close(fd)
	return chain, missing == "", nil
}

// walk opens dir's components from / down without following links, each
// checked, making the missing ones with create; without, it stops at the
// first missing one and names it. It returns the last folder opened and
// the chain of identities down to it, deepest first.
func walk(dir string, owners Owners, create bool) (fd int, chain []ID, missing string, err error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return -1, nil, "", errdefs.Invalidf("%s: want a clean absolute path", dir)
	}
	const flags = dirFlags | unix.O_NOFOLLOW
	fd, err = unix.Open("/", flags, 0)
	if err != nil {
		return -1, nil, "", fmt.Errorf("open /: %w", err)
	}
	id, err := checkFd(fd, "/", owners)
	if err != nil {
		unix.Close(fd)
		return -1, nil, "", err
	}
	chain = []ID{id}
	at := "/"
	for _, e := range split(dir) {
		at = filepath.Join(at, e)
		next, err := unix.Openat(fd, e, flags, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, e, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				// Made, or made by someone else meanwhile: checked below.
				next, err = unix.Openat(fd, e, flags, 0)
			}
		}
		if errors.Is(err, unix.ENOENT) && !create {
			slices.Reverse(chain)
			return fd, chain, at, nil
		}
		if err != nil {
			err = notFolder(fd, e, at, err)
			unix.Close(fd)
			return -1, nil, "", err
		}
		unix.Close(fd)
		fd = next
		id, err := checkFd(fd, at, owners)
		if err != nil {
			unix.Close(fd)
			return -1, nil, "", err
		}
		chain = append(chain, id)
	}
	slices.Reverse(chain)
	return fd, chain, "", nil
}

// notFolder says why component e (at) of the folder fd did not open as a
// folder: a link, something else, or the error itself.
func notFolder(fd int, e, at string, err error) error {
	var st unix.Stat_t
	if serr := unix.Fstatat(fd, e, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil {
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return errdefs.Invalidf("%s is a symbolic link (made by uid %d): it is not followed", at, st.Uid)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return errdefs.Invalidf("%s is not a folder", at)
		}
	}
	return fmt.Errorf("open %s: %w", at, err)
}

// checkFd refuses the folder fd (named at) unless owners or root own it,
// and returns its identity.
func checkFd(fd int, at string, owners Owners) (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return ID{}, fmt.Errorf("stat %s: %w", at, err)
	}
	if !owners.Trusts(int(st.Uid)) {
		return ID{}, errdefs.Invalidf("%s belongs to another user (uid %d): choose a folder of your own", at, st.Uid)
	}
	return statID(&st), nil
}

// same checks that root's folder is the one with identity want.
func same(root *os.Root, want ID) error {
	fi, err := root.Stat(".")
	if err != nil {
		return err
	}
	if got, ok := IDOf(fi); !ok || got != want {
		return errdefs.Conflictf("the folder changed while it was being opened")
	}
	return nil
}

// Chain returns the identities of the folder at path (links followed) and
// of its parents, walked up through ".." from the folder itself, so it
// holds whatever path led there: the folder first, / last.
func Chain(path string) ([]ID, error) {
	fd, err := unix.Open(path, dirFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var chain []ID
	for depth := 0; ; depth++ {
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		if err == nil && depth > 4096 {
			err = errors.New("too deep")
		}
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("walk up from %s: %w", path, err)
		}
		id := statID(&st)
		if len(chain) > 0 && chain[len(chain)-1] == id {
			unix.Close(fd) // "/" is its own parent
			return chain, nil
		}
		chain = append(chain, id)
		up, err := unix.Openat(fd, "..", dirFlags, 0)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("walk up from %s: %w", path, err)
		}
		fd = up
	}
}

// ChainOf is Chain of the folder root has open: an error of class conflict
// if path no longer leads to it.
func ChainOf(root *os.Root, path string) ([]ID, error) {
	chain, err := Chain(path)
	if err != nil {
		return nil, err
	}
	if err := same(root, chain[0]); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return chain, nil
}

//go:build unix

package hostpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Sub opens the folder name (slash-separated) of root, making what is
// missing (perm), one element at a time: each must be a folder, not a
// link, and the os.Root opened for it is checked to be that folder (by
// device and inode), so a link swapped in meanwhile is not followed
// either. With owners, each element must be a folder they (or root) own;
// nil owners takes any (a VM's shared folder, whose entries the guest's
// account may own). Errors naming a link or another owner are of class
// invalid.
func Sub(root *os.Root, name string, perm fs.FileMode, owners Owners) (*os.Root, error) {
	return descend(root, name, perm, owners, true)
}

// Open opens the folder name (slash-separated) of root as Sub does, making
// nothing: a missing element is an error wrapping fs.ErrNotExist.
func Open(root *os.Root, name string, owners Owners) (*os.Root, error) {
	return descend(root, name, 0, owners, false)
}

func descend(root *os.Root, name string, perm fs.FileMode, owners Owners, create bool) (*os.Root, error) {
	cur, err := root.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	at := ""
	for _, e := range split(name) {
		at = path.Join(at, e)
		if e == ".." || e == "." {
			cur.Close()
			return nil, errdefs.Invalidf("%s: want a path down the folder", name)
		}
		next, err := subOne(cur, e, at, perm, owners, create)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// subOne opens (or makes) the folder e of cur, named at in messages.
func subOne(cur *os.Root, e, at string, perm fs.FileMode, owners Owners, create bool) (*os.Root, error) {
	if create {
		if err := cur.Mkdir(e, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", at, err)
		}
	}
	fi, err := cur.Lstat(e)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", at, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, errdefs.Invalidf("%s is a symbolic link: it is not followed", at)
	case !fi.IsDir():
		return nil, errdefs.Invalidf("%s is not a folder", at)
	case owners != nil && !owners.Trusts(ownerOf(fi)):
		return nil, errdefs.Invalidf("%s belongs to another user (uid %d)", at, ownerOf(fi))
	}
	next, err := cur.OpenRoot(e)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", at, err)
	}
	want, _ := IDOf(fi)
	if err := same(next, want); err != nil {
		next.Close()
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	return next, nil
}

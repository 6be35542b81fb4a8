package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/hivecrew/hivecrew/core/hostpath"
)

// CarryIn copies the files under from (a folder the host made with
// Collect: the outbox of a task's earlier VM) into shared/outbox of a fresh
// VM, keeping their paths, owned like the shared folder, and returns how
// many it copied. A missing from carries nothing.
func CarryIn(from, shared string) (int, error) { return CarryInto(from, shared, Outbox) }

// CarryInto copies the files under from into shared/sub (sub is
// slash-separated, made if missing), keeping their paths, owned like the
// shared folder, and returns how many it copied. The VM may be running, so
// everything in it is written through an os.Root of the shared folder
// (nothing the guest puts there can lead a write outside it; a link in
// place of sub, or of a folder of it, is not followed at all) and no
// existing entry is replaced.
func CarryInto(from, shared, sub string) (int, error) {
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	root, owner, err := OpenSharedSub(shared, sub, 0o755)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	n := 0
	err = filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil || rel == "." {
			return err
		}
		switch {
		case d.IsDir():
			if err := root.Mkdir(rel, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("carry %s: %w", rel, err)
			}
			return owner.Give(root, rel)
		case !d.Type().IsRegular():
			return nil // Collect makes regular files and folders only
		}
		if err := carryFile(root, path, rel); err != nil {
			return fmt.Errorf("carry %s: %w", rel, err)
		}
		n++
		return owner.Give(root, rel)
	})
	return n, err
}

func carryFile(root *os.Root, src, rel string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// OpenSharedSub opens the folder sub (slash-separated) of a VM's shared
// folder for the host to write in, making what is missing (perm) and
// giving it to the shared folder's owner, whom it returns. The guest may
// have made any element of sub a link, to a host folder or to another
// folder of its own: none is followed (see hostpath.Sub).
func OpenSharedSub(shared, sub string, perm fs.FileMode) (*os.Root, Owner, error) {
	owner, err := OwnerOf(shared)
	if err != nil {
		return nil, owner, err
	}
	top, err := os.OpenRoot(shared)
	if err != nil {
		return nil, owner, fmt.Errorf("open the shared folder: %w", err)
	}
	defer top.Close()
	root, err := hostpath.Sub(top, sub, perm, nil)
	if err != nil {
		return nil, owner, fmt.Errorf("%s of the shared folder: %w", sub, err)
	}
	for p := path.Clean(sub); p != "." && p != "/"; p = path.Dir(p) {
		if err := owner.Give(top, p); err != nil {
			root.Close()
			return nil, owner, err
		}
	}
	return root, owner, nil
}

// OpenShared opens the folder sub (slash-separated) of a VM's shared folder
// to read what the guest left there. The guest may have made sub, or a
// folder of it, a link to a host folder: none is followed (an error of
// class invalid); a missing one is an error wrapping fs.ErrNotExist.
func OpenShared(shared, sub string) (*os.Root, error) {
	top, err := os.OpenRoot(shared)
	if err != nil {
		return nil, fmt.Errorf("open the shared folder: %w", err)
	}
	defer top.Close()
	root, err := hostpath.Open(top, sub, nil)
	if err != nil {
		return nil, fmt.Errorf("%s of the shared folder: %w", sub, err)
	}
	return root, nil
}

// Give gives name, inside root, to o without following a link, when o is
// someone else than the helper (which only root can do).
func (o Owner) Give(root *os.Root, name string) error {
	if o.UID < 0 || o.UID == os.Geteuid() {
		return nil
	}
	if err := root.Lchown(name, o.UID, o.GID); err != nil {
		return fmt.Errorf("give %s to uid %d: %w", name, o.UID, err)
	}
	return nil
}

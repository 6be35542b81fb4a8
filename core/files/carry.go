package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
// (nothing the guest puts there, a link in place of sub say, can lead a
// write outside it) and no existing entry is replaced.
func CarryInto(from, shared, sub string) (int, error) {
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	owner, err := OwnerOf(shared)
	if err != nil {
		return 0, err
	}
	top, err := os.OpenRoot(shared)
	if err != nil {
		return 0, fmt.Errorf("open the shared folder: %w", err)
	}
	defer top.Close()
	sub = filepath.FromSlash(sub)
	if err := top.MkdirAll(sub, 0o755); err != nil {
		return 0, fmt.Errorf("create %s: %w", sub, err)
	}
	for p := sub; p != "." && p != string(filepath.Separator); p = filepath.Dir(p) {
		if err := rootChown(top, p, owner); err != nil {
			return 0, err
		}
	}
	root, err := top.OpenRoot(sub)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", sub, err)
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
			return rootChown(root, rel, owner)
		case !d.Type().IsRegular():
			return nil // Collect makes regular files and folders only
		}
		if err := carryFile(root, path, rel); err != nil {
			return fmt.Errorf("carry %s: %w", rel, err)
		}
		n++
		return rootChown(root, rel, owner)
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

// rootChown gives name, inside root, to owner without following a link.
func rootChown(root *os.Root, name string, owner Owner) error {
	if owner.UID < 0 || owner.UID == os.Geteuid() {
		return nil
	}
	if err := root.Lchown(name, owner.UID, owner.GID); err != nil {
		return fmt.Errorf("give %s to uid %d: %w", name, owner.UID, err)
	}
	return nil
}

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
// many it copied. The VM may be running, so everything in it is written
// through an os.Root of its outbox (nothing the guest puts there can lead
// a write outside it) and no existing entry is replaced. A missing from
// carries nothing.
func CarryIn(from, shared string) (int, error) {
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	owner, err := OwnerOf(shared)
	if err != nil {
		return 0, err
	}
	outbox := filepath.Join(shared, Outbox)
	if err := os.Mkdir(outbox, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return 0, fmt.Errorf("create outbox: %w", err)
	}
	root, err := os.OpenRoot(outbox)
	if err != nil {
		return 0, fmt.Errorf("open outbox: %w", err)
	}
	defer root.Close()
	if err := rootChown(root, ".", owner); err != nil {
		return 0, err
	}
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

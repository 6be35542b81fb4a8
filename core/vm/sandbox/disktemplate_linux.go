package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// diskTemplate returns an empty VM disk of gb GB kept in dir (Disks/ in
// the data folder, on the VMs' filesystem, so that a clone may share its
// blocks), formatting it the first time; half-made ones left by a helper
// that died are removed. Its name carries the
// features, so a helper that changes them makes a new one. Two machines
// that make it at once each format their own and rename it into place;
// either is good.
//
// A file of that name that is not a regular file of the right size, the
// helper's own and writable by it alone is not used (the kernel would
// mount what it holds): it is made again.
func diskTemplate(dir string, gb int) (string, error) {
	path := filepath.Join(dir, fmt.Sprintf(".disk-%dg-nojournal-v1.ext4", gb))
	if fi, err := os.Lstat(path); err == nil && trustedImage(fi, int64(gb)<<30) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("disk template: %w", err)
	}
	removeStaleTemps(dir)
	f, err := os.CreateTemp(dir, ".disk-*.tmp")
	if err != nil {
		return "", fmt.Errorf("disk template: %w", err)
	}
	tmp := f.Name()
	err = f.Truncate(int64(gb) << 30)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = run("mkfs.ext4", "-q", "-F", "-m", "0", "-O", diskFeatures, "-E", "lazy_itable_init=1", tmp)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("disk template of %d GB: %w", gb, err)
	}
	return path, nil
}

// staleTemp is the age past which a template being made was left by a
// helper that died making it (making one takes well under a second).
const staleTemp = 10 * time.Minute

// removeStaleTemps removes the half-made templates a helper that died
// while making one left in dir; a template another machine is making now
// is younger and stays.
func removeStaleTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, ".disk-*.tmp"))
	for _, p := range tmps {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleTemp {
			os.Remove(p)
		}
	}
}

// trustedImage says whether fi is a disk image the helper may mount: a
// regular file of size bytes, owned by the helper, writable by no one else.
func trustedImage(fi os.FileInfo, size int64) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return fi.Mode().IsRegular() && fi.Mode().Perm()&0o022 == 0 && int(st.Uid) == os.Geteuid() && fi.Size() == size
}

// cloneImage makes dst (which must not exist) a copy of the disk image src:
// the two share their blocks where the filesystem can (FICLONE: btrfs,
// xfs); elsewhere only src's data is copied, its holes stay holes. Nothing
// is synced: the copy is written back with the host's other writes, or not
// at all if the VM is deleted first.
func cloneImage(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !trustedImage(fi, fi.Size()) {
		return fmt.Errorf("%s is not a disk image of the helper's own", src)
	}
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err == nil {
		return out.Close()
	}
	err = copyData(in, out, fi.Size())
	if err == nil {
		err = out.Truncate(fi.Size())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyData copies the data regions of in (SEEK_DATA, SEEK_HOLE) to the
// same offsets of out, leaving out's holes where in has them.
func copyData(in, out *os.File, size int64) error {
	ifd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(ifd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) { // only a hole is left
			return nil
		}
		if err != nil {
			return fmt.Errorf("find the data of %s: %w", in.Name(), err)
		}
		hole, err := unix.Seek(ifd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("find the holes of %s: %w", in.Name(), err)
		}
		if _, err := io.Copy(io.NewOffsetWriter(out, data), io.NewSectionReader(in, data, hole-data)); err != nil {
			return fmt.Errorf("copy %s: %w", in.Name(), err)
		}
		off = hole
	}
	return nil
}

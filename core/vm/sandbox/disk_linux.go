package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/hivecrew/hivecrew/core/vm"
	"golang.org/x/sys/unix"
)

// A root helper gives each machine a disk of its own: an ext4 image the
// size of the VM's disk (sparse: it takes host disk only as the guest
// writes), loop-mounted at <dir>/.disk, whose home/ and shared/ folders are
// bind-mounted over the machine's home and shared folders. A guest that
// fills its home or outbox gets "No space left on device" at its size;
// the host's disk is not touched beyond it. The image stays mounted from
// Load to Delete, so that outputs are read from it after the VM stops.

// diskMounts are the machine's folders that live on its disk. A rootfs
// machine's overlay upper layer is there too (see Machine.overlay).
var diskMounts = []string{"home", "shared"}

// diskHolds says what a machine of kind keeps on its disk.
func diskHolds(kind vm.TemplateKind) string {
	if kind == vm.KindRootFS {
		return "home, shared folder and root filesystem changes"
	}
	return "home and shared folder"
}

// mountDisk makes (first time) and mounts the machine's disk image.
func (m *Machine) mountDisk(gb int) error {
	if err := m.unmountDisk(); err != nil { // left by a helper that crashed
		return err
	}
	img, vol := m.path("disk.img"), m.path(".disk")
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("create the VM's disk: %w", err)
		}
		err = f.Truncate(int64(gb) << 30)
		f.Close()
		if err == nil {
			err = run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", img)
		}
		if err != nil {
			os.Remove(img)
			return fmt.Errorf("make the VM's %d GB disk: %w", gb, err)
		}
	}
	if err := os.MkdirAll(vol, 0o700); err != nil {
		return err
	}
	if err := run("mount", "-o", "loop,nosuid,nodev,noatime", img, vol); err != nil {
		return fmt.Errorf("mount the VM's disk: %w", err)
	}
	for _, d := range diskMounts {
		inner := vol + "/" + d
		if err := os.MkdirAll(inner, 0o755); err != nil {
			m.unmountDisk()
			return err
		}
		if err := os.MkdirAll(m.path(d), 0o755); err != nil {
			m.unmountDisk()
			return err
		}
		if err := unix.Mount(inner, m.path(d), "", unix.MS_BIND, ""); err != nil {
			m.unmountDisk()
			return fmt.Errorf("mount the VM's %s folder: %w", d, err)
		}
	}
	return nil
}

// unmountDisk undoes mountDisk (the loop device goes with the last
// unmount); what is not mounted is left alone.
func (m *Machine) unmountDisk() error {
	var errs []error
	for _, p := range []string{m.path("home"), m.path("shared"), m.path(".disk")} {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

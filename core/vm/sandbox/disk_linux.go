package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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
//
// Setting a disk up, and using it, must not stall the VMs beside it, which
// share the host's disk and its journal. Every flush a loop device gets
// becomes an fsync of its image on the host (a host journal commit and a
// disk cache flush the neighbours' writes wait behind), so a VM's disk
// sends none; the one fsync left per VM is the kernel's, as the loop
// device is set up (LOOP_CONFIGURE):
//   - the image is a copy of an empty template formatted once per size
//     (diskTemplate), not a mkfs per VM (four fsyncs of its own);
//   - it has no journal and is mounted nobarrier: neither commits nor a
//     guest's fsync or sync reach the host's disk; what the guest writes
//     goes to the host's page cache and is written back in the background
//     (or never, if the VM is deleted first). A journal would buy nothing:
//     the image is read only by the helper that made it, through the
//     kernel's cache, and a helper that starts after a crash or a reboot
//     deletes every VM it finds without reading it (daemon.removeOrphans);
//   - no resize inode (a VM's disk never grows) and two superblock
//     backups: the template holds 224 KB of data for 32 GB, not 4.5 MB,
//     and that is what the set-up fsync writes;
//   - the helper sets the loop device up itself (mountImage).
// The size cap is the filesystem's own block count, as before.

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

// diskFeatures are the ext4 features every VM disk is made with (see
// above); diskFlags and diskOptions its mount flags and options.
const (
	diskFeatures = "^has_journal,^resize_inode,sparse_super2"
	diskFlags    = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME
	diskOptions  = "nobarrier"
)

// disksDir is where the empty disk templates are kept: Disks/ in the
// data folder, beside (never among) the VMs' folders, which hold only
// VMs; without a data folder (the backend's own tests), the folder of
// the machines' folders.
func (m *Machine) disksDir() string {
	if m.b.cfg.DataDir == "" {
		return filepath.Dir(m.spec.Dir)
	}
	return filepath.Join(m.b.cfg.DataDir, "Disks")
}

// mountDisk makes (first time) and mounts the machine's disk image.
func (m *Machine) mountDisk(gb int) error {
	if err := m.unmountDisk(); err != nil { // left by a helper that crashed
		return err
	}
	img, vol := m.path("disk.img"), m.path(".disk")
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		tmpl, err := diskTemplate(m.disksDir(), gb)
		if err == nil {
			err = cloneImage(tmpl, img)
		}
		if err != nil {
			os.Remove(img)
			return fmt.Errorf("make the VM's %d GB disk: %w", gb, err)
		}
	}
	if err := os.MkdirAll(vol, 0o700); err != nil {
		return err
	}
	if err := mountImage(img, vol); err != nil {
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

// mountImage mounts the ext4 image img at dir through a loop device of its
// own, which goes with the unmount (autoclear). This is what mount -o loop
// does, less what a VM's start need not wait for: starting mount(8), its
// look through every loop device for one on the same file (one per
// running VM) and its probe of the filesystem's type.
func mountImage(img, dir string) error {
	f, err := os.OpenFile(img, os.O_RDWR|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(f.Fd()), Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}}
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], img)
	// Another VM's setup (or another process) may take the free device
	// between asking for it and configuring it (EBUSY): ask again. Each
	// EBUSY is someone else's success, so VMs set up at once all get one;
	// the time bound is for a device something holds open exclusively.
	for deadline := time.Now().Add(loopWait); time.Now().Before(deadline); {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lo, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = unix.IoctlLoopConfigure(int(lo.Fd()), &cfg)
		if errors.Is(err, unix.EBUSY) {
			lo.Close()
			continue
		}
		if err == nil {
			err = unix.Mount(dev, dir, "ext4", diskFlags, diskOptions)
		}
		// The mount holds the device; without one, closing it detaches it.
		lo.Close()
		if err != nil {
			return fmt.Errorf("%s on %s: %w", img, dev, err)
		}
		return nil
	}
	return fmt.Errorf("no free loop device could be set up within %s", loopWait)
}

// ext4's EXT4_IOC_SHUTDOWN (_IOR('X', 125, __u32)) with
// EXT4_GOING_FLAGS_NOLOGFLUSH, and the loop devices' major number:
// golang.org/x/sys/unix has none of them.
const (
	ext4Shutdown   = 0x8004587d
	ext4NoLogFlush = 2
	loopMajor      = 7
)

// loopWait bounds mountImage's attempts at a free loop device.
const loopWait = 10 * time.Second

// dropDisk unmounts the disk of a machine being deleted without writing
// back what its guest left in the cache: the filesystem is shut down
// first, so the unmount writes nothing through the loop device (a guest
// that wrote 300 MB and stopped would otherwise have them copied into the
// host's cache, as dirty pages that push the host to write back, a moment
// before the image is removed). The shutdown is sent only to a loop
// device's filesystem mounted at .disk: never to the filesystem the
// machine's folder is on.
func (m *Machine) dropDisk() error {
	if f, err := os.OpenFile(m.path(".disk"), os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0); err == nil {
		var disk, dir unix.Stat_t
		if unix.Fstat(int(f.Fd()), &disk) == nil && unix.Stat(m.spec.Dir, &dir) == nil &&
			disk.Dev != dir.Dev && unix.Major(disk.Dev) == loopMajor {
			if err := unix.IoctlSetPointerInt(int(f.Fd()), ext4Shutdown, ext4NoLogFlush); err != nil {
				m.b.cfg.Log.Warn("shut the VM's disk down before unmounting it", "vm", m.spec.ID, "err", err)
			}
		}
		f.Close()
	}
	return m.unmountDisk()
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

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// A rootfs template gives the folders its guest writes (guestWritable:
// /home/user, /opt…) to the sandbox account when it is built, but each VM
// runs as a uid of its own (see machineIdentity). The overlay clone joins
// the two with idmapped mounts (mount_setattr(2) MOUNT_ATTR_IDMAP, Linux
// 5.12; as overlayfs layers, 5.19): the VM sees the template's and its own
// upper layer's files of the sandbox account as its own uid's, and what it
// writes is stored as the sandbox account's. So the template needs no
// change per VM, a VM's uid may differ from one helper run to the next,
// and sealing a template reads the layers as stored.

// idShift maps the on-disk id from to the id to and leaves every other
// id as it is (to itself, stored, shows as nobody).
type idShift struct{ from, to uint32 }

// maxID bounds id ranges: (uid_t)-1 is "no id".
const maxID = 1<<32 - 1

// mappings returns the user namespace id map of s: "inside outside count"
// lines, where an idmapped mount shows a file stored as inside as outside
// and stores a file made by outside as inside (idmappings.rst: the mount's
// map is applied downwards).
func (s idShift) mappings() []syscall.SysProcIDMap {
	var out []syscall.SysProcIDMap
	// Every id but s.from and s.to is itself; s.from shows as s.to.
	holes := []uint32{s.from, s.to}
	slices.Sort(holes)
	next := uint32(0)
	for _, h := range holes {
		if h > next {
			out = append(out, syscall.SysProcIDMap{ContainerID: int(next), HostID: int(next), Size: int(h - next)})
		}
		next = h + 1
	}
	if next < maxID {
		out = append(out, syscall.SysProcIDMap{ContainerID: int(next), HostID: int(next), Size: int(maxID - next)})
	}
	return append(out, syscall.SysProcIDMap{ContainerID: int(s.from), HostID: int(s.to), Size: 1})
}

// userns returns a user namespace whose uid map is uid and gid map gid,
// as an open descriptor: a short-lived child process is made in it.
func userns(uid, gid idShift) (*os.File, error) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cat)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: uid.mappings(), GidMappings: gid.mappings(),
		Pdeathsig: syscall.SIGKILL,
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Start returns once the maps are written and the child runs.
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("make a user namespace for an idmapped mount: %w", err)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	in.Close()
	cmd.Wait()
	return ns, err
}

// idmapClone mounts at dst a clone of the folder src whose ids show
// through ns (userns).
func idmapClone(src, dst string, ns *os.File) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone %s: %w", src, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("the filesystem of %s cannot be idmapped (needs Linux 5.12 and a filesystem that allows it, such as ext4, xfs, btrfs or tmpfs): %w", src, err)
		}
		return fmt.Errorf("idmap %s: %w", src, err)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount the idmapped clone of %s: %w", src, err)
	}
	return nil
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// identity is who sandboxes run as on the host.
type identity struct {
	uid, gid int
	// cred is set when the helper must switch to that account (it is root).
	cred *syscall.Credential
	name string
	// slot says the uid is the machine's own (a uid slot), not shared.
	slot bool
}

// describe says who the machine runs as, for Status.Limits.
func (id identity) describe() string {
	switch {
	case id.slot:
		return fmt.Sprintf("per-VM uid %d", id.uid)
	case id.cred != nil:
		return fmt.Sprintf("shared account %s (uid %d)", id.name, id.uid)
	default:
		return fmt.Sprintf("the helper's own uid %d (not root: no per-VM uid)", id.uid)
	}
}

// sandboxIdentity returns the account sandboxes run as: the helper's own
// when it is not root, otherwise the dedicated account name, created on
// first use as a system account without a home or a login shell.
func sandboxIdentity(name string) (identity, error) {
	if os.Geteuid() != 0 {
		u, _ := user.Current()
		n := strconv.Itoa(os.Getuid())
		if u != nil {
			n = u.Username
		}
		return identity{uid: os.Getuid(), gid: os.Getgid(), name: n}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		out, cerr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if cerr != nil && !strings.Contains(string(out), "already exists") {
			return identity{}, fmt.Errorf("create the sandbox account %s: %v: %s", name, cerr, strings.TrimSpace(string(out)))
		}
		if u, err = user.Lookup(name); err != nil {
			return identity{}, fmt.Errorf("sandbox account %s: %w", name, err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 {
		return identity{}, fmt.Errorf("sandbox account %s is root: refusing to run sandboxes as root", name)
	}
	return identity{uid: uid, gid: gid, name: name,
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}, nil
}

// machineIdentity returns the host identity a new machine runs as, and a
// release to call when the machine is deleted. A root helper gives every
// machine a uid (and a group of the same number) of its own, from the
// slots of slotRange, so that no two machines, of this helper or of
// another, share a host uid: a machine's files, processes (and
// RLIMIT_NPROC) are its own. A helper that is not root cannot switch
// accounts: its machines share its own. Machines of rootfs templates,
// whose templates give the folders the guest writes (/opt, /srv…) to the
// sandbox account when they are built, see those as their own uid's
// through idmapped mounts (idmap_linux.go).
func (b *Backend) machineIdentity(vmID string) (identity, func(), error) {
	if b.id.cred == nil {
		return b.id, func() {}, nil
	}
	r, err := slotRange(b.id.name)
	if err != nil {
		return identity{}, nil, err
	}
	s, err := r.take(uidLockDir)
	if err != nil {
		return identity{}, nil, fmt.Errorf("machine %s: %w", vmID, err)
	}
	uid := r.base + s.slot
	return identity{uid: uid, gid: uid, name: "uid " + strconv.Itoa(uid), slot: true,
		// The account's group is kept as the one supplementary group: it
		// opens the TUN device for slirp4netns (see grantTun) and nothing else.
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{uint32(b.id.gid)}}}, s.release, nil
}

// uidLockDir holds one lock file per uid slot in use: the lock (flock) is
// held by the helper running the machine, from Load to Delete or the
// helper's exit, so helpers on the same host never hand out a uid twice.
const uidLockDir = "/run/hivecrew-uids"

// defaultUIDBase and defaultUIDSlots are the machines' uids when the
// sandbox account has no subordinate range in /etc/subuid: far above the
// uids of accounts and of the subordinate ranges useradd hands out
// (from 100000, 65536 each).
const (
	defaultUIDBase  = 2_000_000_000
	defaultUIDSlots = 65536
)

// uidRange is a range of host uids handed out one per machine.
type uidRange struct {
	base, count int
	// from says where the range comes from, for errors.
	from string
}

// slotRange returns the uids machines run as: the sandbox account's first
// range in /etc/subuid (an administrator reserves one with usermod
// --add-subuids), else the default range.
func slotRange(account string) (uidRange, error) {
	if b, err := os.ReadFile("/etc/subuid"); err == nil {
		if r, ok := subuidOf(string(b), account); ok {
			return r.check()
		}
	}
	return uidRange{base: defaultUIDBase, count: defaultUIDSlots, from: "the default range"}, nil
}

// subuidOf returns account's first range in an /etc/subuid text
// ("name:first:count" lines).
func subuidOf(text, account string) (uidRange, bool) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) != 3 || f[0] != account {
			continue
		}
		base, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && count > 0 {
			return uidRange{base: base, count: count, from: "/etc/subuid"}, true
		}
	}
	return uidRange{}, false
}

func (r uidRange) check() (uidRange, error) {
	if r.base < 1000 || r.count <= 0 || r.base+r.count > 1<<32-2 {
		return uidRange{}, fmt.Errorf("machine uid range %d+%d (from %s) is not a range of unprivileged uids", r.base, r.count, r.from)
	}
	return r, nil
}

// uidSlot is one uid slot held by this process.
type uidSlot struct {
	slot    int
	release func()
}

// take locks the first free slot of r: one whose lock file under dir no
// other process holds and whose uid no process on the host runs as (one a
// crashed helper's machine left would otherwise share the next machine's
// files).
func (r uidRange) take(dir string) (uidSlot, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return uidSlot{}, fmt.Errorf("uid slot locks: %w", err)
	}
	busy := uidsRunning(r)
	for s := range r.count {
		if busy[r.base+s] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(r.base+s)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return uidSlot{}, fmt.Errorf("uid slot lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue
			}
			return uidSlot{}, fmt.Errorf("lock uid slot %d: %w", r.base+s, err)
		}
		return uidSlot{slot: s, release: sync.OnceFunc(func() { f.Close() })}, nil
	}
	return uidSlot{}, fmt.Errorf("all %d machine uids of %s are in use", r.count, r.from)
}

// uidsRunning returns the uids of r that own a process on the host.
func uidsRunning(r uidRange) map[int]bool {
	out := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		fi, err := os.Stat("/proc/" + e.Name())
		if err != nil {
			continue
		}
		if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid >= r.base && uid < r.base+r.count {
			out[uid] = true
		}
	}
	return out
}

// own gives path and, recursively, what it holds to the sandbox account
// (when the helper is root and switches accounts). Symlinks are not followed.
func (id identity) own(path string) error {
	if id.cred == nil {
		return nil
	}
	return walkLchown(path, id.uid, id.gid)
}

func walkLchown(path string, uid, gid int) error {
	if err := os.Lchown(path, uid, gid); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return err
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := walkLchown(path+"/"+e.Name(), uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// HostUID is the host uid the machine's processes and files run as.
func (m *Machine) HostUID() int { return m.id.uid }

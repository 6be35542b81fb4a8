package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// identity is who sandboxes run as on the host.
type identity struct {
	uid, gid int
	// cred is set when the helper must switch to that account (it is root).
	cred *syscall.Credential
	name string
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
// release to call when the machine is deleted. Today every machine shares
// the backend's account.
func (b *Backend) machineIdentity(vmID string) (identity, func(), error) {
	return b.id, func() {}, nil
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

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/config"
)

// slirp gives a sandbox outbound NAT through slirp4netns, with the host's
// loopback unreachable (--disable-host-loopback).
//
// slirp4netns parses every packet the guest sends, in libslirp, a C
// library with a history of memory-safety bugs (CVE-2019-6778,
// CVE-2020-7039, CVE-2021-3592..3595): a guest that exploits one runs code
// on the host, as slirp4netns. So it runs jailed (see jailSlirp): in a
// bubblewrap sandbox of its own (own mount, PID, IPC and UTS namespaces; of
// the host's files only /usr, the resolver configuration and the TUN
// device), as the VM's account with no capabilities, no_new_privs and its
// own seccomp filter (--enable-seccomp). Its --enable-sandbox (the same
// idea, built in) cannot be set up when it joins the namespaces by
// descriptor, which it must (see startSlirp); it stays in the host's
// network namespace, where its NAT sockets live, under the egress policy
// of egress_linux.go.
type slirp struct {
	cmd  *exec.Cmd
	exit *os.File // closing it tells slirp4netns to exit
}

// startSlirp attaches slirp4netns to the network namespace of pid and waits
// until the interface is configured. Its first process waits at a gate
// until join has put it into the machine's cpu group, so that all of the
// NAT's CPU counts as the machine's (see cpuweight_linux.go).
func startSlirp(pid int, id identity, allowHosts []string, join func(pid int) error) (*slirp, error) {
	path, err := exec.LookPath("slirp4netns")
	if err != nil {
		return nil, errors.New("internet mode needs slirp4netns (run make deps)")
	}
	// Its egress policy matches slirp4netns's uid: that of the sandbox
	// account, which only a root helper switches to (see egress_linux.go).
	if id.cred == nil {
		return nil, errors.New("internet mode needs the helper to run as root: its egress policy (no host, link-local or private addresses) is enforced with nftables on the sandbox account's uid")
	}
	allow, err := config.ResolveAllow(allowHosts)
	if err != nil {
		return nil, err
	}
	if err := applyEgress(int(id.cred.Uid), allow); err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, err
	}
	// The sandbox's network namespace, and the user namespace that owns it:
	// bubblewrap ends its setup in a nested user namespace (to give the
	// guest uid 1000), so the PID's own user namespace is the wrong one.
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		readyW.Close()
		exitR.Close()
		exitW.Close()
		return nil, fmt.Errorf("open the sandbox's network namespace: %w", err)
	}
	defer netns.Close()
	ufd, err := unix.IoctlRetInt(int(netns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		readyW.Close()
		exitR.Close()
		exitW.Close()
		return nil, fmt.Errorf("find the owner of the sandbox's network namespace: %w", err)
	}
	userns := os.NewFile(uintptr(ufd), "userns")
	defer userns.Close()
	cmd, err := jailSlirp(id.cred, path, "--configure", "--mtu=65520", "--disable-host-loopback",
		"--enable-seccomp",
		"--ready-fd=3", "--exit-fd=4",
		"--netns-type=path", "--userns-path=/proc/self/fd/6",
		"/proc/self/fd/5", "tap0")
	if err != nil {
		readyW.Close()
		exitR.Close()
		exitW.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{readyW, exitR, netns, userns}
	g, err := newGate()
	if err != nil {
		readyW.Close()
		exitR.Close()
		exitW.Close()
		return nil, err
	}
	defer g.close()
	cmd.Args = g.wrap(cmd.Args)
	cmd.Path, cmd.Stdin = cmd.Args[0], g.r
	out, _ := os.CreateTemp("", "slirp4netns-*.log")
	if out != nil {
		defer os.Remove(out.Name())
		defer out.Close()
		cmd.Stdout, cmd.Stderr = out, out
	}
	err = cmd.Start()
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return nil, fmt.Errorf("start slirp4netns: %w", err)
	}
	g.started()
	go cmd.Wait()
	if err := errors.Join(join(cmd.Process.Pid), g.open()); err != nil {
		exitW.Close()
		cmd.Process.Kill()
		return nil, fmt.Errorf("start slirp4netns: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		b, err := bufio.NewReader(readyR).ReadByte()
		if err == nil && b != '1' {
			err = fmt.Errorf("unexpected ready byte %q", b)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(10 * time.Second):
		err = errors.New("not ready within 10 s")
	}
	if err != nil {
		exitW.Close()
		cmd.Process.Kill()
		msg := ""
		if out != nil {
			b, _ := os.ReadFile(out.Name())
			msg = string(b)
		}
		return nil, fmt.Errorf("slirp4netns: %v: %s", err, msg)
	}
	return &slirp{cmd: cmd, exit: exitW}, nil
}

// jailSlirp returns the command that runs slirp4netns with args in a
// bubblewrap sandbox of its own, as cred with no capabilities and
// no_new_privs (see slirp). bwrap runs as root, which lets it make the
// namespaces without a user namespace of its own; slirp4netns must stay in
// the initial user namespace, as the owner of the VM's, to join that. The
// switch to cred is setpriv's (util-linux), inside the jail. Descriptors
// 3 and up pass through bwrap and setpriv unchanged.
func jailSlirp(cred *syscall.Credential, slirp string, args ...string) (*exec.Cmd, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, errors.New("internet mode needs bubblewrap (run make deps)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return nil, errors.New("internet mode needs setpriv from util-linux (run make deps)")
	}
	jail := []string{
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr",
	}
	// Merged /usr (Debian 12) has these as links into /usr; others have
	// them as folders of libraries.
	for _, dir := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(dir); err == nil {
			jail = append(jail, "--symlink", target, dir)
		} else if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			jail = append(jail, "--ro-bind", dir, dir)
		}
	}
	jail = append(jail,
		// libslirp's DNS forwarder reads the host's resolvers; bwrap
		// would make /etc 0700, closed to the unprivileged account.
		"--perms", "0755", "--dir", "/etc",
		"--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf",
		"--proc", "/proc", // its own PID namespace's: /proc/self/fd/N are its descriptors
		"--dev", "/dev",
		"--perms", "0755", "--dir", filepath.Dir(tunDevice), // bwrap makes a parent 0700
		"--dev-bind", tunDevice, tunDevice,
		"--chdir", "/",
		"--", setpriv,
		fmt.Sprintf("--reuid=%d", cred.Uid), fmt.Sprintf("--regid=%d", cred.Gid),
	)
	if len(cred.Groups) == 0 {
		jail = append(jail, "--clear-groups")
	} else {
		gs := make([]string, len(cred.Groups))
		for i, g := range cred.Groups {
			gs[i] = strconv.FormatUint(uint64(g), 10)
		}
		jail = append(jail, "--groups="+strings.Join(gs, ","))
	}
	jail = append(jail, "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--", slirp)
	cmd := exec.Command(bwrap, append(jail, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

func (s *slirp) stop() {
	s.exit.Close()
	s.cmd.Process.Kill()
}

// tunDevice is the TUN/TAP clone device slirp4netns opens.
const tunDevice = "/dev/net/tun"

// grantTun lets the sandbox account open the TUN device when the helper is
// root and the device is root's alone (0600, as on hosts without udev;
// Debian's udev makes it 0666). Opening it grants nothing by itself: making
// an interface needs CAP_NET_ADMIN in the sandbox's own network namespace.
func grantTun(id identity) (changed bool, err error) {
	if id.cred == nil {
		return false, nil
	}
	fi, err := os.Stat(tunDevice)
	if err != nil {
		return false, nil // no TUN support: internet mode will say so
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm()&0o006 == 0o006 || st.Uid != 0 || st.Gid != 0 || fi.Mode().Perm() != 0o600 {
		return false, nil
	}
	if err := os.Chown(tunDevice, 0, id.gid); err != nil {
		return false, err
	}
	return true, os.Chmod(tunDevice, 0o660)
}

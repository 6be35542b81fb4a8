package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// slirp gives a sandbox outbound NAT through slirp4netns, with the host's
// loopback unreachable (--disable-host-loopback). It runs as the sandbox
// account with its seccomp filter; its --enable-sandbox (a private mount
// namespace) cannot be set up when it joins the namespaces by descriptor,
// which it must (see startSlirp).
type slirp struct {
	cmd  *exec.Cmd
	exit *os.File // closing it tells slirp4netns to exit
}

// startSlirp attaches slirp4netns to the network namespace of pid and waits
// until the interface is configured.
func startSlirp(pid int, id identity, allowHosts []string) (*slirp, error) {
	path, err := exec.LookPath("slirp4netns")
	if err != nil {
		return nil, errors.New("internet mode needs slirp4netns (run make deps)")
	}
	// Its egress policy matches slirp4netns's uid: that of the sandbox
	// account, which only a root helper switches to (see egress_linux.go).
	if id.cred == nil {
		return nil, errors.New("internet mode needs the helper to run as root: its egress policy (no host, link-local or private addresses) is enforced with nftables on the sandbox account's uid")
	}
	allow, err := resolveAllow(allowHosts)
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
	cmd := exec.Command(path, "--configure", "--mtu=65520", "--disable-host-loopback",
		"--enable-seccomp",
		"--ready-fd=3", "--exit-fd=4",
		"--netns-type=path", "--userns-path=/proc/self/fd/6",
		"/proc/self/fd/5", "tap0")
	cmd.ExtraFiles = []*os.File{readyW, exitR, netns, userns}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: id.cred, Pdeathsig: syscall.SIGKILL}
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
	go cmd.Wait()
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

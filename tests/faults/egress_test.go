package faults

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
)

// Egress (issue 15.6): a prompt-injected agent in internet mode tries the
// host's own services (bound to 0.0.0.0, reached through a non-loopback
// address of the host), the cloud metadata address 169.254.169.254 and a
// machine on a private network next to the host. Each must be refused;
// a public address beyond the host still answers, and DNS to the host's
// resolver is let through.

// serve answers "hello" to TCP connections on addr.
func serve(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// neighbour starts a TCP server answering "hello" on ip:8080 in a network
// namespace of the test's own, reached from the host over a veth pair in
// the /30 of ip (ip ends in .2), and returns, once it answers the host,
// the host's end of the pair.
func neighbour(t *testing.T, ip string) string {
	t.Helper()
	ns, r := "hc-"+randHex(3), randHex(2)
	hostIf, nsIf := "hcv"+r, "hcp"+r
	peer := ip[:strings.LastIndex(ip, ".")] + ".1"
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	t.Cleanup(func() { exec.Command("ip", "link", "del", hostIf).Run() })
	run(t, "ip", "link", "set", nsIf, "netns", ns)
	run(t, "ip", "addr", "add", peer+"/30", "dev", hostIf)
	run(t, "ip", "link", "set", hostIf, "up")
	run(t, "ip", "netns", "exec", ns, "ip", "addr", "add", ip+"/30", "dev", nsIf)
	run(t, "ip", "netns", "exec", ns, "ip", "link", "set", nsIf, "up")
	srv := exec.Command("ip", "netns", "exec", ns, "/usr/bin/python3", "-c", fmt.Sprintf(`import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((%q, 8080)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"hello\n"); c.close()`, ip))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", ip+":8080", time.Second); err == nil {
			c.Close()
			return hostIf
		}
		if time.Now().After(deadline) {
			t.Fatalf("the neighbour %s did not come up", ip)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// guestConnect tries a TCP connection from the guest and reports the outcome.
func guestConnect(t *testing.T, c *guest.Client, host string, port int) string {
	t.Helper()
	py := fmt.Sprintf(`import socket
try:
    s = socket.create_connection((%q, %d), 3)
    print("CONNECTED", s.recv(16).decode().strip())
except OSError as e:
    print("FAILED", e)`, host, port)
	return strings.TrimSpace(guestSh(t, c, "python3 -c '"+py+"'").Stdout)
}

// hostAddr returns a non-loopback IPv4 address of this host.
func hostAddr(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("this host has no non-loopback IPv4 address")
	return ""
}

func TestInternetGuestCannotReachHostOrPrivateNetworks(t *testing.T) {
	port := serve(t, "0.0.0.0:0")
	host := hostAddr(t)
	// A private network next to the host; its link also carries the
	// cloud metadata address as an address of the host, as on clouds
	// where it is answered locally.
	run(t, "ip", "addr", "add", "169.254.169.254/32", "dev", neighbour(t, "10.231.7.2"))
	neighbour(t, "198.51.100.2") // TEST-NET-2: stands for the internet
	_, c := startGuest(t, vm.NetworkInternet)
	if out := guestConnect(t, c, "198.51.100.2", 8080); out != "CONNECTED hello" {
		t.Errorf("internet guest could not reach a public address: %s", out)
	}
	for _, target := range []struct {
		host string
		port int
	}{{host, port}, {"169.254.169.254", port}, {"10.231.7.2", 8080}, {"198.51.100.1", port}} {
		if out := guestConnect(t, c, target.host, target.port); !strings.HasPrefix(out, "FAILED") {
			t.Errorf("internet guest reached %s:%d: %s", target.host, target.port, out)
		}
	}
	// DNS to the host's resolver (a private address here) goes through
	// slirp4netns's forwarder: a query gets an answer, whatever it says.
	py := `import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
s.sendto(q, ("10.0.2.3", 53))
try:
    d, _ = s.recvfrom(512); print("ANSWER", d[:2].hex())
except OSError as e:
    print("FAILED", e)`
	if out := strings.TrimSpace(guestSh(t, c, "python3 -c '"+py+"'").Stdout); out != "ANSWER 1234" {
		t.Errorf("DNS through slirp4netns: %s", out)
	}
}

// TestInternetAllowlistLetsAPrivateHostThrough: a host on a private
// network, named in the allowlist, is reachable; its neighbour on another
// private network is still refused.
func TestInternetAllowlistLetsAPrivateHostThrough(t *testing.T) {
	neighbour(t, "10.231.9.2")
	neighbour(t, "10.231.10.2")
	_, c := startGuest(t, vm.NetworkInternet, "10.231.9.2")
	if out := guestConnect(t, c, "10.231.9.2", 8080); out != "CONNECTED hello" {
		t.Errorf("internet guest could not reach the allowlisted 10.231.9.2: %s", out)
	}
	if out := guestConnect(t, c, "10.231.10.2", 8080); !strings.HasPrefix(out, "FAILED") {
		t.Errorf("internet guest reached 10.231.10.2, not allowlisted: %s", out)
	}
}

// TestInternetSlirpRunsJailed: slirp4netns, which parses every packet the
// guest sends, runs as a real internet-mode VM starts it: as the VM's
// account with no capabilities, no_new_privs and a seccomp filter, in
// mount and PID namespaces of its own whose root holds none of the
// host's data (core/vm/sandbox's TestSlirpJailHoldsAnExploitedSlirp tries
// the attacker's moves from inside the same jail).
//
// Its CPU is the VM's: it runs in the VM's cpu cgroup, under the VM's
// quota and weight, not the helper's (which outweighs its machines).
func TestInternetSlirpRunsJailed(t *testing.T) {
	m, c := startGuest(t, vm.NetworkInternet)
	if out := guestSh(t, c, "id -u").Stdout; strings.TrimSpace(out) == "" {
		t.Fatal("the guest does not answer")
	}
	pid := descendant(t, os.Getpid(), "slirp4netns")
	if got := cpuCgroup(t, pid); path.Base(got) != m.Spec().ID {
		t.Errorf("slirp4netns runs in cpu cgroup %q, not its VM's (%s)", got, m.Spec().ID)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, l := range strings.Split(string(status), "\n") {
		if k, v, ok := strings.Cut(l, ":\t"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	if uid := strings.Fields(st["Uid"]); len(uid) != 4 || uid[0] == "0" || uid[1] == "0" || uid[2] == "0" || uid[3] == "0" {
		t.Errorf("slirp4netns runs as uids %q", st["Uid"])
	}
	for k, want := range map[string]string{"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
		if st[k] != want {
			t.Errorf("slirp4netns %s = %q, want %q", k, st[k], want)
		}
	}
	for _, ns := range []string{"mnt", "pid"} {
		mine, _ := os.Readlink("/proc/self/ns/" + ns)
		its, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil || its == mine {
			t.Errorf("slirp4netns shares the helper's %s namespace (%s, %v)", ns, its, err)
		}
	}
	root := fmt.Sprintf("/proc/%d/root", pid)
	for _, d := range []string{"home", "root", "work", "var", "tmp", "etc/shadow", "etc/passwd"} {
		if _, err := os.Lstat(root + "/" + d); err == nil {
			t.Errorf("slirp4netns's root holds /%s", d)
		}
	}
	if _, err := os.Stat(root + "/usr/bin"); err != nil {
		t.Errorf("slirp4netns's root has no /usr: %v", err)
	}
}

// cpuCgroup returns the cgroup v1 cpu path of process pid.
func cpuCgroup(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if parts := strings.SplitN(l, ":", 3); len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "cpu") {
			return parts[2]
		}
	}
	t.Fatalf("process %d is in no cgroup v1 cpu group (the test machines mount it): %s", pid, b)
	return ""
}

// descendant returns the pid of the one process named comm among the
// descendants of pid.
func descendant(t *testing.T, pid int, comm string) int {
	t.Helper()
	parent := func(p string) int {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			return 0
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		n, _ := strconv.Atoi(f[1])
		return n
	}
	ents, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); strings.TrimSpace(string(b)) != comm {
			continue
		}
		for a := parent(e.Name()); a > 1; a = parent(strconv.Itoa(a)) {
			if a == pid {
				found = append(found, p)
				break
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d processes named %s under pid %d, want 1", len(found), comm, pid)
	}
	return found[0]
}

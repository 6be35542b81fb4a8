package sandbox

import (
	"slices"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/vm"
)

// pairs returns the operands of every occurrence of flag.
func operands(args []string, flag string, n int) [][]string {
	var out [][]string
	for i, a := range args {
		if a == flag && i+n < len(args) {
			out = append(out, args[i+1:i+1+n])
		}
		if a == "--" {
			break
		}
	}
	return out
}

func TestBwrapArgsIsolate(t *testing.T) {
	root := []RootEntry{{Name: "usr"}, {Name: "etc"}, {Name: "bin", Link: "usr/bin"}, {Name: "srv"}, {Name: "var"}}
	args := bwrapArgs(launch{ID: "0123456789", Kind: vm.KindHost, Network: vm.NetworkOffline, RootEntries: root,
		Mask: []string{"/srv/hivecrew-data", "/root/.local/share/hivecrew"}, DisplayWidth: 1280, DisplayHeight: 800, LogLevel: "info", CPUs: 3})
	if env := operands(args, "--setenv", 2); !slices.ContainsFunc(env, func(kv []string) bool { return kv[0] == "GOMAXPROCS" && kv[1] == "3" }) {
		t.Errorf("the guest agent's GOMAXPROCS is not the machine's 3 CPUs: %v", env)
	}
	for _, ns := range []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent"} {
		if !slices.Contains(args, ns) {
			t.Errorf("missing %s", ns)
		}
	}
	var masked []string
	for _, o := range operands(args, "--tmpfs", 1) {
		masked = append(masked, o[0])
	}
	for _, m := range []string{"/home", "/root", "/tmp", "/run", "/var/tmp", "/mnt", "/media", "/srv/hivecrew-data"} {
		if !slices.Contains(masked, m) {
			t.Errorf("%s is not masked (%v)", m, masked)
		}
	}
	if slices.Contains(masked, "/root/.local/share/hivecrew") {
		t.Error("a data directory under a masked folder is masked twice")
	}
	// Masks come before the binds into them, and the root is read-only.
	if i, j := slices.Index(args, "--tmpfs"), slices.Index(args, "--bind"); i < 0 || j < i {
		t.Error("a bind comes before the masks")
	}
	// The host's top-level entries are bound read-only one by one (never
	// "/" as a whole, never /run), links recreated, then the root made
	// read-only.
	ro := operands(args, "--ro-bind", 2)
	if len(ro) < 4 || ro[0][0] != "/usr" || ro[1][0] != "/etc" || ro[2][0] != "/srv" || ro[3][0] != "/var" {
		t.Errorf("host root entries not bound read-only first: %v", ro)
	}
	for _, b := range ro {
		if b[0] == "/" || b[0] == "/run" {
			t.Errorf("binds %s", b[0])
		}
	}
	if l := operands(args, "--symlink", 2); len(l) != 2 || l[0][0] != "usr/bin" || l[0][1] != "/bin" || l[1][1] != "/var/lib/dbus/machine-id" {
		t.Errorf("links = %v", l)
	}
	if ro := operands(args, "--remount-ro", 1); len(ro) != 1 || ro[0][0] != "/" {
		t.Errorf("root not made read-only: %v", ro)
	}
	// /var is a fresh tmpfs laid over whatever was bound; the VM's own
	// machine id replaces the host's.
	if !slices.ContainsFunc(operands(args, "--tmpfs", 1), func(o []string) bool { return o[0] == "/var" }) {
		t.Errorf("/var not a tmpfs: %v", args)
	}
	if !slices.Contains(args, "/etc/machine-id") {
		t.Error("no machine id of its own")
	}
	if slices.Contains(args, "/etc/resolv.conf") {
		t.Error("an offline sandbox gets a resolver")
	}
	cmd := args[slices.Index(args, "--")+1:]
	if cmd[0] != guestAgent || !strings.Contains(strings.Join(cmd, " "), "--session 1280x800 --listen unix:/run/hivecrew/agent.sock --shared /mnt/shared") {
		t.Errorf("agent command = %q", cmd)
	}
}

func TestBwrapArgsRootFSAndInternet(t *testing.T) {
	args := bwrapArgs(launch{ID: "x", Kind: vm.KindRootFS, Network: vm.NetworkInternet, Root: "/run/hivecrew-sandbox/x/root", Mask: []string{"/srv/data"}, DisplayWidth: 800, DisplayHeight: 600, LogLevel: "info"})
	if root := operands(args, "--bind", 2); len(root) == 0 || root[0][0] != "/run/hivecrew-sandbox/x/root" || root[0][1] != "/" {
		t.Errorf("rootfs not bound as / first: %v", root)
	}
	for _, ro := range operands(args, "--ro-bind", 2) {
		if ro[0] == "/" {
			t.Error("a rootfs sandbox binds the host root")
		}
	}
	if !slices.Contains(args, "/etc/resolv.conf") {
		t.Error("an internet sandbox has no resolver")
	}
	for _, o := range operands(args, "--tmpfs", 1) {
		if o[0] == "/srv/data" {
			t.Error("host paths are masked inside a rootfs, where they do not exist")
		}
	}
}

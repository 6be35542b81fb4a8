package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/vmtest"
)

// rootfsTemplate makes a template root filesystem cheaply: the host's /usr
// hard-linked, /etc and D-Bus's machine id copied, the mount points a
// sandbox needs, and a world-writable /scratch for the clones to write in.
func rootfsTemplate(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "hc-rootfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	for _, c := range [][]string{
		{"cp", "-al", "/usr", dir + "/usr"},
		{"cp", "-a", "/etc", dir + "/etc"},
		{"mkdir", "-p", dir + "/var/lib", dir + "/home", dir + "/root", dir + "/tmp", dir + "/run", dir + "/var/tmp", dir + "/mnt", dir + "/media", dir + "/proc", dir + "/dev", dir + "/scratch"},
		{"cp", "-a", "/var/lib/dbus", dir + "/var/lib/dbus"},
		{"chmod", "1777", dir + "/scratch"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + l); err == nil {
			os.Symlink(target, filepath.Join(dir, l))
		}
	}
	return dir
}

// TestRootFSTemplateClones: a template root filesystem boots as
// copy-on-write clones: what one clone writes, the other and the template
// never see, and the clone keeps it across a restart.
func TestRootFSTemplateClones(t *testing.T) {
	data := t.TempDir()
	b := newBackend(t, data)
	if os.Geteuid() != 0 {
		_, err := b.Create(context.Background(), vm.Spec{ID: "r", Dir: filepath.Join(data, "r"), Template: vm.Template{Kind: vm.KindRootFS, Path: "/"}})
		if !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "root") {
			t.Fatalf("rootfs template without root = %v, want a clear unsupported error", err)
		}
		return
	}
	tmpl := rootfsTemplate(t)
	ms := startN(t, b, data, 2, vm.Template{ID: "rootfs", Kind: vm.KindRootFS, Path: tmpl}, vm.NetworkOffline)
	a, bb := ms[0], ms[1]
	if res := sh(t, a.c, "echo only-in-a > /scratch/a.txt && cat /scratch/a.txt"); strings.TrimSpace(res.Stdout) != "only-in-a" {
		t.Fatalf("clone a cannot write its root filesystem: %+v", res)
	}
	if res := sh(t, bb.c, "ls -A /scratch"); strings.TrimSpace(res.Stdout) != "" {
		t.Errorf("clone b sees clone a's file: %q", res.Stdout)
	}
	if ents, _ := os.ReadDir(filepath.Join(tmpl, "scratch")); len(ents) != 0 {
		t.Errorf("the template changed: %d entries in /scratch", len(ents))
	}
	if res := sh(t, a.c, "touch /usr/bin/planted"); res.ExitCode == 0 {
		t.Error("the guest wrote into root's /usr")
	}
	// The clone keeps its changes across a restart.
	ctx := context.Background()
	a.c.Close()
	if err := a.m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := vmtest.Connect(ctx, t, a.m)
	if res := sh(t, c, "cat /scratch/a.txt"); strings.TrimSpace(res.Stdout) != "only-in-a" {
		t.Errorf("clone a lost its change across a restart: %+v", res)
	}
}

// TestRootFSClonesRunAsTheirOwnUIDs answers issue 15.4 for rootfs
// templates: two clones of one template never share a host uid, yet the
// folders the template gave the sandbox account at build time are each
// clone's own to write (idmapped layers); what a clone writes is stored as
// the sandbox account's, so the template and sealing need nothing per VM;
// and a clone's root filesystem changes are on its own disk, so a guest
// filling / gets "No space left on device" at the VM's size.
func TestRootFSClonesRunAsTheirOwnUIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("rootfs clones need root: run this test as root (the test machines are)")
	}
	data := t.TempDir()
	b := newBackend(t, data)
	tmpl := rootfsTemplate(t)
	name, uid := b.Account()
	acct, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(acct.Gid)
	owned := filepath.Join(tmpl, "owned")
	if err := os.Mkdir(owned, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(owned, "seed"), []byte("seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{owned, filepath.Join(owned, "seed")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ms [2]vm.Machine
	var cs [2]*guest.Client
	for i := range ms {
		id := fmt.Sprintf("own%d-%s", i, randHex(3))
		m, err := b.Create(ctx, vm.Spec{ID: id, Template: vm.Template{ID: "rootfs", Kind: vm.KindRootFS, Path: tmpl}, Dir: filepath.Join(data, "VMs", id), CPUs: 1, MemoryMB: 1024, DiskGB: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Delete(context.Background()) })
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		ms[i], cs[i] = m, vmtest.Connect(ctx, t, m)
	}
	ua, ub := ms[0].Status().Limits.UID, ms[1].Status().Limits.UID
	if !strings.HasPrefix(ua, "per-VM uid") || ua == ub {
		t.Fatalf("the clones run as %q and %q; want a uid of each one's own", ua, ub)
	}
	// The template's folder of the sandbox account is each clone's.
	if res := sh(t, cs[0], "echo mine > /owned/new && echo more >> /owned/seed && stat -c %u /owned/new /owned/seed && id -u"); res.ExitCode != 0 {
		t.Fatalf("clone a cannot write the template's guest folder: %+v", res)
	} else if f := strings.Fields(res.Stdout); len(f) != 3 || f[0] != f[2] || f[1] != f[2] {
		t.Errorf("in clone a, its files and its seed copy are owned by %v; want the guest's uid", f)
	}
	if res := sh(t, cs[1], "rm /owned/seed && ls -A /owned"); res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "" {
		t.Errorf("clone b cannot delete the template's file, or sees clone a's: %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(owned, "seed")); err != nil || string(b) != "seed\n" {
		t.Errorf("the template's file changed: %q, %v", b, err)
	}
	// Stored as the sandbox account's, in the clone's upper layer on its disk.
	_, upper, err := ms[0].(interface {
		Layers() (string, string, error)
	}).Layers()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(upper, filepath.Join(ms[0].Spec().Dir, ".disk")+"/") {
		t.Errorf("clone a's upper layer %s is not on its disk", upper)
	}
	for _, f := range []string{"owned/new", "owned/seed"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(upper, f), &st); err != nil {
			t.Errorf("clone a's %s is not in its upper layer: %v", f, err)
		} else if int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("clone a's %s is stored as %d:%d; want the sandbox account's %d:%d", f, st.Uid, st.Gid, uid, gid)
		}
	}
	// Filling the root filesystem fills the clone's disk, not the host's.
	if d := ms[0].Status().Limits.Disk; !strings.Contains(d, "root filesystem") {
		t.Errorf("clone a's disk limit says %q", d)
	}
	res := sh(t, cs[0], "dd if=/dev/zero of=/scratch/fill bs=1M count=2048 2>&1; df -m /scratch | tail -1")
	if !strings.Contains(res.Stdout, "No space left") {
		t.Errorf("filling clone a's / did not stop at its disk: %+v", res)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ms[0].Spec().Dir, "disk.img"), &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 1<<30 {
		t.Errorf("clone a's disk takes %d MB of the host's; want at most its 1 GB", used>>20)
	}
}

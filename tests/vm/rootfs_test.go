package vm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
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

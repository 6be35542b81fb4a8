package sandbox

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
	"golang.org/x/sys/unix"
)

// diskMachine returns a machine in parent with its disk of gb GB mounted,
// unmounted when the test ends.
func diskMachine(t *testing.T, parent, id string, gb int) *Machine {
	t.Helper()
	m, err := setUpDisk(t, parent, id, gb)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// setUpDisk is diskMachine for a goroutine of the test's: it returns its
// error.
func setUpDisk(t *testing.T, parent, id string, gb int) (*Machine, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("this test mounts disk images: run it as root (the test machines are)")
	}
	m := &Machine{b: &Backend{cfg: Config{Log: slog.New(slog.DiscardHandler)}}, spec: vm.Spec{ID: id, Dir: filepath.Join(parent, id)}}
	if err := os.MkdirAll(m.spec.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := m.mountDisk(gb); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := m.unmountDisk(); err != nil {
			t.Error(err)
		}
	})
	return m, nil
}

// TestDiskIsTheVMsOwn: two VMs' disks, cloned from one template, are each
// a sparse file of the VM's size that holds the filesystem's size, and
// what one VM writes is on its disk alone, never in the template.
func TestDiskIsTheVMsOwn(t *testing.T) {
	parent := t.TempDir()
	a, b := diskMachine(t, parent, "a", 1), diskMachine(t, parent, "b", 1)
	if err := os.WriteFile(a.path("home", "mine"), []byte("a's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.path("home", "mine")); !os.IsNotExist(err) {
		t.Fatalf("b sees a's file: %v", err)
	}
	for _, m := range []*Machine{a, b} {
		var st syscall.Stat_t
		if err := syscall.Stat(m.path("disk.img"), &st); err != nil {
			t.Fatal(err)
		}
		if st.Size != 1<<30 || st.Blocks*512 > 4<<20 {
			t.Errorf("%s's image: %d bytes long, %d taken; want 1 GB, sparse", m.spec.ID, st.Size, st.Blocks*512)
		}
		var fs unix.Statfs_t
		if err := unix.Statfs(m.path("home"), &fs); err != nil {
			t.Fatal(err)
		}
		if size := int64(fs.Blocks) * fs.Bsize; size < 900<<20 || size > 1<<30 {
			t.Errorf("%s's home is on a filesystem of %d bytes; want its 1 GB disk", m.spec.ID, size)
		}
	}
	tmpl, err := diskTemplate(parent, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("debugfs", "-R", "ls -p /", tmpl).Output()
	if err != nil || !strings.Contains(string(out), "/lost+found/") || strings.Contains(string(out), "/home/") {
		t.Errorf("the template's root after two VMs made their folders on their disks: %q %v", out, err)
	}
}

// TestDisksSetUpAtOnce: 24 VMs whose disks are set up at once, the first
// of their size (so each may make the template too), each get a loop
// device and a disk of their own.
func TestDisksSetUpAtOnce(t *testing.T) {
	parent := t.TempDir()
	ms := make([]*Machine, 24)
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i := range ms {
		wg.Go(func() { ms[i], errs[i] = setUpDisk(t, parent, "vm"+strconv.Itoa(i), 1) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	devs := map[string]string{}
	for _, m := range ms {
		dev := loopDevice(t, m.path(".disk"))
		if other, ok := devs[dev]; ok {
			t.Errorf("%s and %s share %s", m.spec.ID, other, dev)
		}
		devs[dev] = m.spec.ID
		if err := os.WriteFile(m.path("home", "id"), []byte(m.spec.ID), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		if b, err := os.ReadFile(m.path("home", "id")); err != nil || string(b) != m.spec.ID {
			t.Errorf("%s's home holds %q (%v)", m.spec.ID, b, err)
		}
	}
}

// TestGuestSyncStaysOnItsDisk: a guest's fsync and sync reach its own
// filesystem only: its loop device gets no flush, so the host's disk (and
// the VMs beside it) never waits for them.
func TestGuestSyncStaysOnItsDisk(t *testing.T) {
	m := diskMachine(t, t.TempDir(), "a", 1)
	dev := loopDevice(t, m.path(".disk"))
	before := flushes(t, dev)
	for i := range 5 {
		f, err := os.Create(m.path("home", "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte{'x'}, 64<<10)); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := unix.Syncfs(int(f.Fd())); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if n := flushes(t, dev) - before; n != 0 {
		t.Errorf("five fsyncs and syncs in the VM sent %s %d flushes (each an fsync of its image on the host)", dev, n)
	}
	if got, err := os.ReadFile(m.path("home", "f4")); err != nil || len(got) != 64<<10 {
		t.Errorf("the synced file: %d bytes, %v", len(got), err)
	}
}

// TestDeletedDiskWritesNothingBack: deleting a VM whose guest left 64 MB
// in its cache unmounts its disk without copying them through the loop
// device into the host's cache, and shuts down no other filesystem: a
// machine whose disk is not mounted, in a folder on a filesystem of its
// own (standing for the host's), leaves that filesystem working.
func TestDeletedDiskWritesNothingBack(t *testing.T) {
	m := diskMachine(t, t.TempDir(), "a", 1)
	if err := os.WriteFile(m.path("home", "cached"), bytes.Repeat([]byte{'x'}, 64<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := loopDevice(t, m.path(".disk"))
	before := written(t, dev)
	if err := m.dropDisk(); err != nil {
		t.Fatal(err)
	}
	if n := written(t, dev) - before; n > 16<<20 {
		t.Errorf("deleting the disk wrote %d MB through %s", n>>20, dev)
	}
	if _, err := os.Stat(m.path("home", "cached")); !os.IsNotExist(err) {
		t.Errorf("the disk is still mounted: %v", err)
	}

	host := diskMachine(t, t.TempDir(), "host", 1)
	bare := &Machine{b: m.b, spec: vm.Spec{ID: "bare", Dir: host.path("home", "bare")}}
	if err := os.MkdirAll(bare.path(".disk"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := bare.dropDisk(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bare.path("after"), []byte("still writable"), 0o600); err != nil {
		t.Fatalf("the filesystem of a machine with no disk mounted, after dropDisk: %v", err)
	}
}

// TestDiskTemplateOfAnotherIsNotMounted: a file in the template's place
// that another user could have written (world-writable, another owner, a
// link) is replaced by a fresh template, and a link's target is left alone.
func TestDiskTemplateOfAnotherIsNotMounted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test formats disk images: run it as root (the test machines are)")
	}
	dir := t.TempDir()
	want, err := diskTemplate(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "elsewhere")
	plant := map[string]func() error{
		"world-writable": func() error { return junk(want, 0o666, 0) },
		"another owner":  func() error { return junk(want, 0o600, 65534) },
		"a link": func() error {
			if err := junk(target, 0o600, 0); err != nil {
				return err
			}
			os.Remove(want)
			return os.Symlink(target, want)
		},
	}
	for name, p := range plant {
		if err := p(); err != nil {
			t.Fatal(err)
		}
		got, err := diskTemplate(dir, 1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fi, err := os.Lstat(got)
		if err != nil || !trustedImage(fi, 1<<30) || !isExt4(t, got) {
			t.Errorf("%s: the template used is %v (%v), ext4 %v", name, fi.Mode(), err, isExt4(t, got))
		}
	}
	if isExt4(t, target) {
		t.Error("the link's target was formatted")
	}
}

// junk writes a 1 GB file of no filesystem at path, with mode and owner.
func junk(path string, mode os.FileMode, uid int) error {
	os.Remove(path)
	if err := os.WriteFile(path, []byte("not a filesystem"), mode); err != nil {
		return err
	}
	if err := os.Chmod(path, mode); err != nil {
		return err
	}
	if err := os.Truncate(path, 1<<30); err != nil {
		return err
	}
	return os.Chown(path, uid, uid)
}

// isExt4 says whether the image at path has an ext4 superblock's magic.
func isExt4(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	magic := make([]byte, 2)
	if _, err := f.ReadAt(magic, 1024+56); err != nil {
		t.Fatal(err)
	}
	return magic[0] == 0x53 && magic[1] == 0xef
}

// loopDevice returns the block device (loopN) mounted at dir.
func loopDevice(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		for i, x := range f {
			if x == "-" && i+2 < len(f) {
				return filepath.Base(f[i+2])
			}
		}
	}
	t.Fatalf("nothing mounted at %s", dir)
	return ""
}

// written returns the bytes written to dev so far.
func written(t *testing.T, dev string) int64 {
	t.Helper()
	return int64(stat(t, dev)[6]) * 512
}

// flushes returns the flush requests dev has completed.
func flushes(t *testing.T, dev string) int {
	t.Helper()
	return stat(t, dev)[15]
}

// stat returns the fields of dev's /sys/block/*/stat
// (Documentation/block/stat.rst).
func stat(t *testing.T, dev string) []int {
	t.Helper()
	b, err := os.ReadFile("/sys/block/" + dev + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if len(out) < 17 {
		t.Fatalf("%s's stat has no flush counts: %q", dev, b)
	}
	return out
}

// TestDiskTemplatesStayOutOfTheVMsFolder: with a data folder, the empty
// disk templates are kept in its Disks/ folder, so the VMs' folder holds
// VMs alone (a helper restarting after a crash deletes whatever it finds
// there as a VM left behind), and a half-made template a helper that
// died left there is removed while a fresh one (another VM making it
// now) stays.
func TestDiskTemplatesStayOutOfTheVMsFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts disk images: run it as root (the test machines are)")
	}
	data := t.TempDir()
	vms := filepath.Join(data, "VMs")
	disks := filepath.Join(data, "Disks")
	if err := os.MkdirAll(disks, 0o700); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(disks, ".disk-1.tmp"), filepath.Join(disks, ".disk-2.tmp")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	m := &Machine{b: &Backend{cfg: Config{DataDir: data, Log: slog.New(slog.DiscardHandler)}}, spec: vm.Spec{ID: "vm-a", Dir: filepath.Join(vms, "vm-a")}}
	if err := os.MkdirAll(m.spec.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := m.mountDisk(1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.unmountDisk(); err != nil {
			t.Error(err)
		}
	})
	ents, err := os.ReadDir(vms)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "vm-a" {
		t.Errorf("the VMs' folder holds %v; want the VM alone", names)
	}
	if _, err := os.Stat(filepath.Join(disks, ".disk-1g-nojournal-v1.ext4")); err != nil {
		t.Errorf("the template is not in Disks/: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the half-made template of an hour ago is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a template being made now was removed: %v", err)
	}
}

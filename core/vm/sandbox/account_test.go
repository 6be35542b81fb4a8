package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestUIDSlotsAreExclusive answers "two VMs share a host uid": slots taken
// in this process differ, a slot another process holds (as a second
// helper would) is passed over, a slot whose uid runs a process (left by a
// crashed helper) is passed over, and a released slot is handed out again.
func TestUIDSlotsAreExclusive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test switches uids: run it as root (the test machines are)")
	}
	dir := t.TempDir()
	r := uidRange{base: 1_900_000_000 + os.Getpid()%1000*10, count: 4, from: "test"}
	a, err := r.take(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Another process holds slot 1 (flock(1) is util-linux's).
	other := exec.Command("flock", "-x", filepath.Join(dir, strconv.Itoa(r.base+1)), "sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	// A process runs as slot 2's uid.
	stray := exec.Command("sleep", "30")
	stray.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(r.base + 2), Gid: uint32(r.base + 2)}}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stray.Process.Kill(); stray.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, _ := os.OpenFile(filepath.Join(dir, strconv.Itoa(r.base+1)), os.O_RDWR, 0)
		locked := f != nil && syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
		if f != nil {
			f.Close()
		}
		if locked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("flock(1) did not take its lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, err := r.take(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.slot != 0 || b.slot != 3 {
		t.Fatalf("slots taken = %d, %d; want 0 and 3 (1 is locked by another process, 2's uid runs a process)", a.slot, b.slot)
	}
	if _, err := r.take(dir); err == nil {
		t.Fatal("a fifth machine got a uid from a range of four with all in use")
	}
	a.release()
	c, err := r.take(dir)
	if err != nil || c.slot != 0 {
		t.Fatalf("after a release, take = %d, %v; want slot 0 again", c.slot, err)
	}
	c.release()
	b.release()
}

func TestSubuidOf(t *testing.T) {
	text := "alice:100000:65536\nhivecrew-sandbox:300000000:1000\nhivecrew-sandbox:5:5\n"
	r, ok := subuidOf(text, "hivecrew-sandbox")
	if !ok || r.base != 300000000 || r.count != 1000 {
		t.Fatalf("subuidOf = %+v, %v", r, ok)
	}
	if _, ok := subuidOf(text, "bob"); ok {
		t.Fatal("bob has no range")
	}
	if _, err := (uidRange{base: 0, count: 10}).check(); err == nil {
		t.Fatal("a range holding root is accepted")
	}
}

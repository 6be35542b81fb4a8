package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGuestsGrowingTogetherAreKilledInTheirGroup: the attacker's move is
// every guest growing at once, each within its own limit (a hostile model
// can ask every agent to). Two machines of 256 MB below a parent capped at
// 300 MB each allocate and touch 200 MB: the kernel kills one of them
// within the machines' group (the host's own processes, this test among
// them, are never a candidate), and the other keeps running. Without the
// parent's cap both fit their own limits and live.
func TestGuestsGrowingTogetherAreKilledInTheirGroup(t *testing.T) {
	parent := v1TestParent(t, "memcap")
	if err := capMachinesMemory(cgroupRoot, parent, 300); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cgroupRoot, "memory", ownV1Paths()["memory"], parent)
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || strings.TrimSpace(string(b)) != "314572800" {
			t.Errorf("the machines' parent %s = %q (%v), want 300 MB", f, b, err)
		}
	}
	type hog struct {
		cmd  *exec.Cmd
		done chan error
	}
	var hogs []hog
	for _, id := range []string{"vm-a", "vm-b"} {
		l := v1MachineIn(t, parent, id)
		// It waits for a line on stdin, sent once it is in the machine's
		// groups, then allocates and touches 200 MB and holds them.
		cmd := exec.Command("/bin/sh", "-c", `read go; exec python3 -c 'import time; b = b"x" * (200 << 20); time.sleep(20)'`)
		gate, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		if err := l.join(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		h := hog{cmd, make(chan error, 1)}
		go func() { h.done <- cmd.Wait() }()
		hogs = append(hogs, h)
		if _, err := gate.Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
	}
	// One is killed once both have grown (within seconds); the other then
	// holds its 200 MB, under the cap, until it is stopped.
	ended := make(chan error, len(hogs))
	for _, h := range hogs {
		go func() { ended <- <-h.done }()
	}
	select {
	case err := <-ended:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("a machine's process ended otherwise than killed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("two guests grew past their parent's cap together, and both live after 10 s")
	}
	select {
	case err := <-ended:
		t.Errorf("both guests ended: the second with %v", err)
	case <-time.After(time.Second):
	}
}

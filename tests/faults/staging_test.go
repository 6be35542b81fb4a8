package faults

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/hivecrew/hivecrew/core/vm"
)

// TestOtherUsersCannotReadARunningVM answers issue 15.7: the helper
// stages each running VM's home, shared and run folders as bind mounts
// under /run/hivecrew-sandbox/<id>/ for bubblewrap, which runs as the
// sandbox account. Those mounts show the folders with their own modes, so
// with a traversable staging folder any local user could read what an
// agent works on (and its guest agent's socket folder) past the data
// folder's 0700. The guest writes world-readable files into its home and
// shared folder; another local user (nobody) tries to list and read them
// through the staged paths, and to list the staging root. The VM's id, which
// names those paths, is not in any command line that user can read.
func TestOtherUsersCannotReadARunningVM(t *testing.T) {
	m, c := startGuest(t, vm.NetworkOffline)
	secret := "vm-secret-" + randHex(6)
	if r := guestSh(t, c, "echo "+secret+" > ~/notes.txt && echo "+secret+" > \"$HIVECREW_SHARED/notes.txt\" && chmod 644 ~/notes.txt \"$HIVECREW_SHARED/notes.txt\""); r.ExitCode != 0 {
		t.Fatalf("the guest could not write its files: %q", r.Stderr)
	}
	staged := "/run/hivecrew-sandbox/" + m.Spec().ID
	for _, cmd := range []string{
		"cat " + staged + "/shared/notes.txt",
		"cat " + staged + "/home/notes.txt",
		"ls " + staged + "/run",
		"ls " + staged,
		"ls /run/hivecrew-sandbox",
	} {
		sh := exec.Command("/bin/sh", "-c", cmd)
		sh.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := sh.CombinedOutput()
		if err == nil || strings.Contains(string(out), secret) || strings.Contains(string(out), "agent.sock") {
			t.Errorf("as nobody, %q succeeded: %q", cmd, out)
		} else if !strings.Contains(string(out), "Permission denied") {
			t.Errorf("as nobody, %q failed otherwise than by permission: %q", cmd, out)
		}
	}
	ps := exec.Command("ps", "-eo", "args")
	ps.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := ps.Output()
	if err != nil || !strings.Contains(string(out), "bwrap --args") {
		t.Fatalf("ps as nobody: %v, %d bytes without the sandbox's bwrap", err, len(out))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, m.Spec().ID) {
			t.Errorf("a command line shows the VM's id: %q", line)
		}
	}
	// The sandbox itself still works through the staged folders.
	if r := guestSh(t, c, "cat ~/notes.txt"); strings.TrimSpace(r.Stdout) != secret {
		t.Fatalf("the guest reads %q back", r.Stdout)
	}
}

package faults

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hivecrew/hivecrew/core/vm"
)

// TestHostDescriptorsStayOutOfTheGuest: a descriptor the helper inherited
// from whatever started it (a terminal's pipe, a launcher's log file), open
// without close-on-exec, must not reach any process of the guest: a guest
// program that finds one in /proc could read or write the host's end.
// The attacker's move: list every descriptor of every guest process.
// (bubblewrap closes every descriptor it was not told to pass before it
// runs the guest's first program; the guest agent then seals what the
// sandbox's setup left it.)
func TestHostDescriptorsStayOutOfTheGuest(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], 0); err != nil { // inheritable, as a parent would leave it
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	var st syscall.Stat_t
	if err := syscall.Fstat(p[1], &st); err != nil {
		t.Fatal(err)
	}
	leaked := fmt.Sprintf("pipe:[%d]", st.Ino)
	_, c := startGuest(t, vm.NetworkOffline)
	r := guestSh(t, c, "for d in /proc/[0-9]*/fd/*; do readlink $d; done 2>/dev/null | sort | uniq -c")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "/dev/null") && !strings.Contains(r.Stdout, "socket:") {
		t.Fatalf("could not list the guest's descriptors: exit %d %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, leaked) {
		t.Fatalf("a guest process holds the host's pipe %s:\n%s", leaked, r.Stdout)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/self/fd/%d", p[1])); err != nil {
		t.Fatalf("the test's own pipe is gone: %v", err)
	}
}

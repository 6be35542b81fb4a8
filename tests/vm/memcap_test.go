package vm

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/vm"
)

// TestMachinesMemoryIsCappedTogether: a sandbox backend caps all its
// machines' memory together at the host's memory less admission's reserve
// (on the test machines' cgroup v1 memory hierarchy), and says so to
// admission, which then counts what the host has available rather than
// the machines' caps.
func TestMachinesMemoryIsCappedTogether(t *testing.T) {
	b := newBackend(t, t.TempDir())
	if !b.Capabilities().MemoryCapped {
		t.Fatal("the sandbox backend does not cap its machines' memory together")
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	host := int(uint64(si.Totalram) * uint64(si.Unit) >> 20)
	want := strconv.FormatInt(int64(host-vm.ReserveMB(host))<<20, 10)
	own := ""
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(cg), "\n") {
		if p := strings.SplitN(l, ":", 3); len(p) == 3 && slices.Contains(strings.Split(p[1], ","), "memory") {
			own = p[2]
		}
	}
	dir := filepath.Join("/sys/fs/cgroup/memory", own, "hivecrew")
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("the machines' parent %s = %q (%v), want %s (%d MB of the host's %d)", f, got, err, want, host-vm.ReserveMB(host), host)
		}
	}
}

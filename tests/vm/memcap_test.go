package vm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/sandbox"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
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
	dir := filepath.Join("/sys/fs/cgroup/memory", ownCgroup(t, "memory"), "hivecrew")
	for _, f := range []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("the machines' parent %s = %q (%v), want %s (%d MB of the host's %d)", f, got, err, want, host-vm.ReserveMB(host), host)
		}
	}
}

// ownCgroup returns the test process's cgroup in the v1 hierarchy of ctrl.
func ownCgroup(t *testing.T, ctrl string) string {
	t.Helper()
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(cg), "\n") {
		if p := strings.SplitN(l, ":", 3); len(p) == 3 && slices.Contains(strings.Split(p[1], ","), ctrl) {
			return p[2]
		}
	}
	t.Fatalf("no cgroup v1 %s hierarchy in /proc/self/cgroup", ctrl)
	return ""
}

// TestSandboxesGrowingTogetherAreKilledInTheirGroup is the attacker's move
// in real sandboxes: every guest grows at once, each within its own
// limit (a hostile model can ask every agent to). Two sandboxes of 1 GB,
// whose group is capped at 700 MB, each run a program that allocates and
// touches 450 MB. The kernel kills one of those programs inside its
// sandbox; the other runs to its end, and the host (this test, which
// holds both sandboxes' guest connections) is never a candidate. Without
// the group's cap, both would fit their own limits and live.
func TestSandboxesGrowingTogetherAreKilledInTheirGroup(t *testing.T) {
	data := t.TempDir()
	group := "hivecrew-test-memcap-" + randHex(3)
	t.Cleanup(func() { // after the sandboxes are deleted (cleanups run last first)
		for _, ctrl := range []string{"pids", "memory", "cpu", "freezer"} {
			dir := filepath.Join("/sys/fs/cgroup", ctrl, ownCgroup(t, ctrl), group)
			for i := 0; ; i++ {
				err := os.Remove(dir)
				if err == nil || os.IsNotExist(err) {
					break
				}
				if i == 50 {
					t.Errorf("remove the test's group %s: %v", dir, err)
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
	b, err := sandbox.New(sandbox.Config{AgentBinary: agentBin, DataDir: data, Log: quiet(), Group: group, MemoryMB: 700})
	if err != nil {
		t.Fatal(err)
	}
	if !b.Capabilities().MemoryCapped {
		t.Fatal("the sandbox backend does not cap its machines' memory together")
	}
	limit, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", ownCgroup(t, "memory"), group, "memory.limit_in_bytes"))
	if err != nil || strings.TrimSpace(string(limit)) != strconv.Itoa(700<<20) {
		t.Fatalf("the group's memory.limit_in_bytes = %q (%v), want 700 MB", limit, err)
	}
	ms := startN(t, b, data, 2, vm.Template{ID: "host", Kind: vm.KindHost}, vm.NetworkOffline)
	const hog = `python3 -c 'import time; b = b"x" * (450 << 20); time.sleep(8)'; echo "status $?"`
	results := make([]string, len(ms))
	var g errgroup.Group
	for i, r := range ms {
		g.Go(func() error {
			res, err := r.c.Shell(context.Background(), protocol.ShellParams{Command: hog, TimeoutSeconds: 30})
			results[i] = strings.TrimSpace(res.Stdout)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("a guest's shell call failed: %v", err)
	}
	slices.Sort(results)
	if !slices.Equal(results, []string{"status 0", "status 137"}) {
		t.Fatalf("the two guests' programs ended %q; want one killed (status 137) and the other run to its end (status 0)", results)
	}
	// Both sandboxes are still up: the kill took a guest's program, not
	// a sandbox's agent.
	for i, r := range ms {
		if got := strings.TrimSpace(sh(t, r.c, "echo alive").Stdout); got != "alive" {
			t.Errorf("sandbox %d after the kill: %q", i, got)
		}
	}
}

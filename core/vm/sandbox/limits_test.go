package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCgroupLimitsWrites checks the cgroup v2 interface files against a
// synthetic cgroupfs; a real one needs its memory and cpu controllers
// delegated to the helper, which the test machines do not offer.
func TestCgroupLimitsWrites(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)
	l, err := cgroupLimits(root, defaultGroup, "vm1", 4096, 2, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer l.cleanup()
	for file, want := range map[string]string{
		"hivecrew/vm1/memory.max":         "4294967296",
		"hivecrew/vm1/cpu.max":            "200000 100000",
		"hivecrew/vm1/pids.max":           "512",
		"cgroup.subtree_control":          "+memory +cpu +pids",
		"hivecrew/cgroup.subtree_control": "+memory +cpu +pids",
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if l.cgroup == nil || !strings.HasPrefix(l.what.Memory, "cgroup v2") || !strings.HasPrefix(l.what.Processes, "cgroup v2") {
		t.Fatalf("limits = %+v", l)
	}
	// The synthetic folder holds files, so removal fails here; the real
	// cgroupfs removes a cgroup folder with its interface files.
}

// TestRlimitFallback: with no cgroup at all, memory is an RLIMIT_DATA per
// process and a machine with a uid of its own gets RLIMIT_NPROC; one that
// shares the helper's uid gets no process cap (it would count the
// helper's processes too) and says so.
func TestRlimitFallback(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("hugetlb\n"), 0o644)
	l, err := prepareLimits(root, defaultGroup, "vm1", 2048, 2, 300, identity{uid: 2000000001, slot: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.cgroup != nil || l.v1 != nil || strings.Join(l.wrap[1:], " ") != "--nproc=300 --data=2147483648 --" ||
		!strings.HasPrefix(l.what.Memory, "rlimit DATA 2048 MB") || !strings.HasPrefix(l.what.Processes, "rlimit NPROC 300") ||
		l.what.UID != "per-VM uid 2000000001" || l.what.CPU != "" {
		t.Fatalf("fallback limits = %+v", l)
	}
	l, err = prepareLimits(root, defaultGroup, "vm1", 2048, 2, 300, identity{uid: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.wrap[1:], " ") != "--data=2147483648 --" || l.what.Processes != "" {
		t.Fatalf("fallback limits, shared uid = %+v", l)
	}
}

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
	l, err := cgroupLimits(root, "vm1", 4096, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.cleanup()
	for file, want := range map[string]string{
		"hivecrew/vm1/memory.max":         "4294967296",
		"hivecrew/vm1/cpu.max":            "200000 100000",
		"hivecrew/vm1/pids.max":           "4096",
		"cgroup.subtree_control":          "+memory +cpu +pids",
		"hivecrew/cgroup.subtree_control": "+memory +cpu +pids",
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if l.cgroup == nil || !strings.HasPrefix(l.describe, "cgroup v2") {
		t.Fatalf("limits = %+v", l)
	}
	// The synthetic folder holds files, so removal fails here; the real
	// cgroupfs removes a cgroup folder with its interface files.
}

func TestRlimitFallback(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("hugetlb\n"), 0o644)
	l, err := prepareLimits(root, "vm1", 2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	if l.cgroup != nil || len(l.wrap) == 0 || l.wrap[1] != "--data=2147483648" || !strings.HasPrefix(l.describe, "rlimit") {
		t.Fatalf("fallback limits = %+v", l)
	}
}

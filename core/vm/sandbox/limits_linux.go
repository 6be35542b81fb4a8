package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// limits enforces a machine's memory and CPU caps.
type limits struct {
	// wrap prefixes the bwrap command (prlimit), empty with cgroups.
	wrap []string
	// cgroup is an open cgroup directory to start bwrap in, or nil.
	cgroup *os.File
	// describe says how the caps are enforced, for the VM record.
	describe string
	// cleanup removes the cgroup once its processes are gone.
	cleanup func() error
}

// cgroupRoot is the cgroup v2 mount point.
const cgroupRoot = "/sys/fs/cgroup"

// prepareLimits caps memory (MB) and CPUs through cgroup v2 when the helper
// can manage its memory and cpu controllers there, and through rlimits
// otherwise.
func prepareLimits(root, id string, memoryMB, cpus int) (limits, error) {
	if l, err := cgroupLimits(root, id, memoryMB, cpus); err == nil {
		return l, nil
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return limits{describe: "none: no cgroup v2 controllers and no prlimit"}, nil
	}
	bytes := int64(memoryMB) << 20
	return limits{
		wrap:     []string{prlimit, fmt.Sprintf("--data=%d", bytes), "--"},
		describe: fmt.Sprintf("rlimit: data ≤ %d MB per process; CPU not capped (no cgroup v2 memory/cpu controllers)", memoryMB),
	}, nil
}

// cgroupLimits creates root/hivecrew/<id> with memory.max and cpu.max.
func cgroupLimits(root, id string, memoryMB, cpus int) (limits, error) {
	controllers, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return limits{}, err
	}
	have := strings.Fields(string(controllers))
	if !slices.Contains(have, "memory") || !slices.Contains(have, "cpu") {
		return limits{}, errors.New("cgroup v2 lacks the memory or cpu controller")
	}
	parent := filepath.Join(root, "hivecrew")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return limits{}, err
	}
	// Both levels must pass the controllers down.
	for _, dir := range []string{root, parent} {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0o644); err != nil {
			return limits{}, fmt.Errorf("enable cgroup controllers in %s: %w", dir, err)
		}
	}
	dir := filepath.Join(parent, id)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return limits{}, err
	}
	settings := map[string]string{
		"memory.max":      fmt.Sprint(int64(memoryMB) << 20),
		"memory.swap.max": "0",
		"cpu.max":         fmt.Sprintf("%d 100000", max(cpus, 1)*100000),
		"pids.max":        "4096",
	}
	for file, v := range settings {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil && !(file == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			os.Remove(dir)
			return limits{}, fmt.Errorf("set %s: %w", file, err)
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return limits{}, err
	}
	return limits{
		cgroup:   f,
		describe: fmt.Sprintf("cgroup v2: memory.max %d MB, cpu.max %d CPUs, pids.max 4096", memoryMB, max(cpus, 1)),
		cleanup: func() error {
			f.Close()
			if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove cgroup %s: %w", dir, err)
			}
			return nil
		},
	}, nil
}

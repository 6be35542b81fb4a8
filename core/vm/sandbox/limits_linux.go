package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

// limits enforces a machine's process, memory and CPU caps.
//
// Where they can be had, caps count the whole machine: cgroup v2 (its
// controllers available to the helper), else cgroup v1 (the pids, memory,
// cpu and freezer hierarchies of hybrid hosts, each a cgroup per machine
// below the helper's own). What no cgroup caps falls back to rlimits:
// RLIMIT_NPROC, per host uid (so per machine with a uid of its own), and
// RLIMIT_DATA per process.
type limits struct {
	// wrap prefixes the bwrap command (prlimit).
	wrap []string
	// cgroup is an open cgroup v2 directory to start bwrap in, or nil.
	cgroup *os.File
	// v1 are the machine's cgroup v1 groups, joined through the start gate,
	// or nil.
	v1 *cgroupV1
	// what says how each cap is enforced, for the machine's status.
	what vm.Limits
	// cleanup removes the cgroups once their processes are gone; nil with
	// none.
	cleanup func() error
}

// needsGate says the first process must wait until it is put into the
// machine's cgroups (cgroup v1 has no CLONE_INTO_CGROUP).
func (l limits) needsGate() bool { return l.v1 != nil }

// join puts pid (the gated first process) into the machine's cgroups.
func (l limits) join(pid int) error {
	if l.v1 == nil {
		return nil
	}
	return l.v1.join(pid)
}

// events says what the caps did to the machine (OOM kills, refused
// forks), or "".
func (l limits) events() string {
	if l.v1 == nil {
		return ""
	}
	return l.v1.events()
}

// cgroupRoot is where the cgroup filesystems are mounted: the v2
// hierarchy, or on hybrid hosts one folder per v1 controller.
const cgroupRoot = "/sys/fs/cgroup"

// defaultMaxProcs caps a machine's processes (threads count too, as they
// do for pids.max): a desktop with a browser runs a few hundred.
const defaultMaxProcs = 1024

// prepareLimits caps a machine of the given memory (MB), CPUs and
// processes, through cgroup v2, else cgroup v1, else rlimits. who is the
// host identity the machine runs as: a uid of its own makes RLIMIT_NPROC a
// cap on the machine.
func prepareLimits(root, group, id string, memoryMB, cpus, procs int, who identity) (limits, error) {
	perVMUID := who.slot
	if procs <= 0 {
		procs = defaultMaxProcs
	}
	l, v2err := cgroupLimits(root, group, id, memoryMB, cpus, procs)
	var v1err error
	if v2err != nil {
		if l, v1err = cgroupV1Limits(root, group, id, memoryMB, cpus, procs); v1err != nil {
			l = limits{}
		}
	}
	var wrap []string
	if perVMUID {
		// Counted per host uid: the machine's own processes, whatever
		// user namespaces they make.
		wrap = append(wrap, fmt.Sprintf("--nproc=%d", procs))
	}
	if l.what.Memory == "" {
		wrap = append(wrap, fmt.Sprintf("--data=%d", int64(memoryMB)<<20))
	}
	l.what.UID = who.describe()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil || len(wrap) == 0 {
		return l, nil
	}
	l.wrap = append(append([]string{prlimit}, wrap...), "--")
	if l.what.Processes == "" && perVMUID {
		l.what.Processes = fmt.Sprintf("rlimit NPROC %d (per-VM uid; no pids cgroup)", procs)
	}
	if l.what.Memory == "" {
		l.what.Memory = fmt.Sprintf("rlimit DATA %d MB per process (no memory cgroup: %v)", memoryMB, errors.Join(v2err, v1err))
	}
	return l, nil
}

// v2Parent makes root/<group>, the machines' parent on cgroup v2, with
// the memory, cpu and pids controllers passed down to its children.
func v2Parent(root, group string) (string, error) {
	controllers, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return "", err
	}
	have := strings.Fields(string(controllers))
	if !slices.Contains(have, "memory") || !slices.Contains(have, "cpu") {
		return "", errors.New("cgroup v2 lacks the memory or cpu controller")
	}
	parent := filepath.Join(root, group)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	// Both levels must pass the controllers down.
	for _, dir := range []string{root, parent} {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0o644); err != nil {
			return "", fmt.Errorf("enable cgroup controllers in %s: %w", dir, err)
		}
	}
	return parent, nil
}

// cgroupLimits creates root/<group>/<id> with memory.max, cpu.max and
// pids.max (cgroup v2).
func cgroupLimits(root, group, id string, memoryMB, cpus, procs int) (limits, error) {
	parent, err := v2Parent(root, group)
	if err != nil {
		return limits{}, err
	}
	dir := filepath.Join(parent, id)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return limits{}, err
	}
	settings := map[string]string{
		"memory.max":      fmt.Sprint(int64(memoryMB) << 20),
		"memory.swap.max": "0",
		"cpu.max":         fmt.Sprintf("%d 100000", max(cpus, 1)*100000),
		"pids.max":        strconv.Itoa(procs),
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
		cgroup: f,
		what: vm.Limits{
			Processes: fmt.Sprintf("cgroup v2 pids.max %d", procs),
			Memory:    fmt.Sprintf("cgroup v2 memory.max %d MB, no swap", memoryMB),
			CPU:       fmt.Sprintf("cgroup v2 cpu.max %d CPUs", max(cpus, 1)),
		},
		cleanup: func() error {
			f.Close()
			if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove cgroup %s: %w", dir, err)
			}
			return nil
		},
	}, nil
}

// cgroupV1 is a machine's cgroup in each cgroup v1 hierarchy it uses.
type cgroupV1 struct {
	// dirs maps a controller (pids, memory, cpu, freezer) to the machine's
	// folder in its hierarchy.
	dirs map[string]string
}

// v1Controllers are the cgroup v1 controllers a machine uses; pids and
// memory are required, cpu and freezer used when present.
var v1Controllers = []string{"pids", "memory", "cpu", "freezer"}

// ownV1Paths returns, per v1 controller, the helper's own cgroup (from
// /proc/self/cgroup, "4:memory:/some/path" lines).
func ownV1Paths() map[string]string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return map[string]string{}
	}
	defer f.Close()
	return ownV1PathsIn(f)
}

// ownV1PathsIn reads the /proc/<pid>/cgroup lines of r.
func ownV1PathsIn(r io.Reader) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		// The helper's group of its own (HelperFirst) is not where its
		// machines go: they go beside it.
		own := parts[2]
		if path.Base(own) == helperGroup {
			own = path.Dir(own)
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = own
		}
	}
	return out
}

// defaultGroup is the cgroup, below the helper's own (cgroup v1) or at
// the root (v2), that holds every machine's (Config.Group).
const defaultGroup = "hivecrew"

// cgroupV1Limits creates, in each v1 hierarchy, <the helper's own
// cgroup>/<group>/<id> (below the helper's own, so that whatever caps the
// helper caps its machines too) and sets pids.max, memory.limit_in_bytes
// (and memory.memsw.limit_in_bytes: no swap beyond it), and the CFS quota.
func cgroupV1Limits(root, group, id string, memoryMB, cpus, procs int) (limits, error) {
	// The groups of this machine a helper that crashed left.
	if err := removeLeftoverV1(root, group, id); err != nil {
		return limits{}, err
	}
	own := ownV1Paths()
	c := &cgroupV1{dirs: map[string]string{}}
	fail := func(err error) (limits, error) {
		c.remove()
		return limits{}, err
	}
	for _, ctrl := range v1Controllers {
		mount := filepath.Join(root, ctrl)
		if _, err := os.Stat(filepath.Join(mount, "tasks")); err != nil {
			if ctrl == "pids" || ctrl == "memory" {
				return fail(fmt.Errorf("no cgroup v1 %s hierarchy at %s", ctrl, mount))
			}
			continue
		}
		parent := filepath.Join(mount, own[ctrl], group)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			if ctrl == "pids" || ctrl == "memory" {
				return fail(fmt.Errorf("cgroup v1 %s: %w", ctrl, err))
			}
			continue
		}
		dir := filepath.Join(parent, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			if ctrl == "pids" || ctrl == "memory" {
				return fail(fmt.Errorf("cgroup v1 %s: %w", ctrl, err))
			}
			continue
		}
		c.dirs[ctrl] = dir
	}
	bytes := int64(memoryMB) << 20
	set := func(ctrl, file, v string) error {
		if err := os.WriteFile(filepath.Join(c.dirs[ctrl], file), []byte(v), 0o644); err != nil {
			return fmt.Errorf("cgroup v1 %s: set %s to %s: %w", ctrl, file, v, err)
		}
		return nil
	}
	if err := set("pids", "pids.max", strconv.Itoa(procs)); err != nil {
		return fail(err)
	}
	if err := set("memory", "memory.limit_in_bytes", strconv.FormatInt(bytes, 10)); err != nil {
		return fail(err)
	}
	what := vm.Limits{
		Processes: fmt.Sprintf("cgroup v1 pids.max %d", procs),
		Memory:    fmt.Sprintf("cgroup v1 memory.limit_in_bytes %d MB", memoryMB),
	}
	// Without swap accounting (no memsw file) the host may have no swap,
	// or the machine may swap beyond its cap.
	if _, err := os.Stat(filepath.Join(c.dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
		if err := set("memory", "memory.memsw.limit_in_bytes", strconv.FormatInt(bytes, 10)); err != nil {
			return fail(err)
		}
		what.Memory += ", swap included"
	}
	if c.dirs["cpu"] != "" {
		if err := set("cpu", "cpu.cfs_period_us", "100000"); err != nil {
			return fail(err)
		}
		if err := set("cpu", "cpu.cfs_quota_us", strconv.Itoa(max(cpus, 1)*100000)); err != nil {
			return fail(err)
		}
		// Light until it runs (see cpuweight_linux.go).
		if err := set("cpu", "cpu.shares", strconv.Itoa(startingShares)); err != nil {
			return fail(err)
		}
		what.CPU = fmt.Sprintf("cgroup v1 cpu.cfs_quota_us %d CPUs", max(cpus, 1))
	}
	return limits{v1: c, what: what, cleanup: c.remove}, nil
}

// cpuDir is the machine's cgroup v1 cpu folder, or "".
func (l limits) cpuDir() string {
	if l.v1 == nil {
		return ""
	}
	return l.v1.dirs["cpu"]
}

// cpuParent is the cgroup v1 cpu folder of every machine's cgroup (whose
// weight startBoost raises while machines start), or "".
func (l limits) cpuParent() string {
	if l.cpuDir() == "" {
		return ""
	}
	return filepath.Dir(l.cpuDir())
}

// running gives the machine, started, a running machine's CPU weight
// (see cpuweight_linux.go).
func (l limits) running() error {
	if l.cpuDir() == "" {
		return nil
	}
	return setShares(l.cpuDir(), normalShares)
}

// joinCPU moves pid, a helper's process that serves the machine (its
// NAT), into the machine's cpu group: its CPU counts against the
// machine's quota, at a machine's weight.
func (l limits) joinCPU(pid int) error {
	if l.cpuDir() == "" {
		return nil
	}
	return writeCgroup(filepath.Join(l.cpuDir(), "cgroup.procs"), strconv.Itoa(pid))
}

// join moves pid into the machine's group of every hierarchy.
func (c *cgroupV1) join(pid int) error {
	for _, ctrl := range v1Controllers {
		if dir := c.dirs[ctrl]; dir != "" {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				return fmt.Errorf("put the sandbox into cgroup v1 %s: %w", ctrl, err)
			}
		}
	}
	return nil
}

// setFrozen freezes or thaws every process of the machine, waiting (up to
// 5 s) until the freezer says it is done.
func (c *cgroupV1) setFrozen(frozen bool) error {
	dir := c.dirs["freezer"]
	if dir == "" {
		return errdefs.Unsupportedf("no cgroup v1 freezer")
	}
	want := "THAWED"
	if frozen {
		want = "FROZEN"
	}
	if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte(want), 0o644); err != nil {
		return fmt.Errorf("freezer: %w", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "freezer.state"))
		if err != nil {
			return fmt.Errorf("freezer: %w", err)
		}
		if strings.TrimSpace(string(b)) == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freezer: still %s after 5 s", strings.TrimSpace(string(b)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tasks lists the threads in the machine's pids group (every hierarchy
// holds the same processes).
func (c *cgroupV1) tasks() ([]int, error) {
	for _, ctrl := range v1Controllers {
		if dir := c.dirs[ctrl]; dir != "" {
			b, err := os.ReadFile(filepath.Join(dir, "tasks"))
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				return nil, err
			}
			var out []int
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
				}
			}
			return out, nil
		}
	}
	return nil, nil
}

// killAll SIGKILLs every process of the machine: frozen first (where a
// freezer is) so that none forks while the list is read, then thawed to
// let the signals land; repeated until the groups are empty (10 s at most).
func (c *cgroupV1) killAll() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		frozen := c.setFrozen(true) == nil
		pids, err := c.tasks()
		if err != nil {
			return err
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		if frozen {
			c.setFrozen(false)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup v1: %d processes still alive 10 s after SIGKILL", len(pids))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// remove kills what is left in the machine's groups and removes them.
func (c *cgroupV1) remove() error {
	if len(c.dirs) == 0 {
		return nil
	}
	errs := []error{c.killAll()}
	for ctrl, dir := range c.dirs {
		// rmdir fails (EBUSY) until the last exiting task is gone.
		var err error
		for range 200 {
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil && errors.Is(err, syscall.EBUSY) {
			// The memory controller may hold an empty group for a while
			// (its pages are still being uncharged): it goes once it can,
			// without holding up the machine's stop.
			go removeWhenFree(dir)
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup v1 %s: %w", ctrl, err))
			continue
		}
		delete(c.dirs, ctrl)
	}
	return errors.Join(errs...)
}

// removeLeftoverV1 removes the cgroup v1 groups of machine id below the
// helper's own group, with what still runs in them: those a helper
// that crashed left (found by a new start of the machine, or its
// successor's Delete). None: nothing to do.
func removeLeftoverV1(root, group, id string) error {
	own := ownV1Paths()
	c := &cgroupV1{dirs: map[string]string{}}
	for _, ctrl := range v1Controllers {
		dir := filepath.Join(root, ctrl, own[ctrl], group, id)
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			c.dirs[ctrl] = dir
		}
	}
	return c.remove()
}

// removeWhenFree retries removing an empty cgroup for a minute.
func removeWhenFree(dir string) {
	for range 600 {
		time.Sleep(100 * time.Millisecond)
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, syscall.EBUSY) {
			return
		}
	}
}

// events says what the caps did: processes the OOM killer ended, forks
// pids.max refused, or "".
func (c *cgroupV1) events() string {
	var out []string
	if dir := c.dirs["memory"]; dir != "" {
		if n := field(filepath.Join(dir, "memory.oom_control"), "oom_kill"); n > 0 {
			out = append(out, fmt.Sprintf("the OOM killer ended %d of its processes at the memory limit", n))
		}
	}
	if dir := c.dirs["pids"]; dir != "" {
		if n := field(filepath.Join(dir, "pids.events"), "max"); n > 0 {
			out = append(out, fmt.Sprintf("%d process starts were refused at the process limit", n))
		}
	}
	return strings.Join(out, "; ")
}

// field returns the number after name in a "name value" lines file, or 0.
func field(path, name string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

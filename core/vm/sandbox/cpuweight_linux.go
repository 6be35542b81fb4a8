package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// CPU weight: what a sandbox gets when the host's CPUs are contended.
//
// Every machine's cgroup sits below one parent ("hivecrew", below the
// helper's own cgroup). Running, the parent has the default weight
// (cgroup v1 cpu.shares 1024): all agent VMs together compete as one
// ordinary program beside the user's own (a build, a browser), and the
// user's foreground work is not slowed by background agents. Each
// machine's CFS quota (cpu.cfs_quota_us, its CPU count) caps it whatever
// the weights say.
//
// While a machine starts, the parent's weight is raised (startShares)
// and set back when the last start in progress ends (ready, failed or
// aborted). A user waiting for a task to begin expects it to begin at
// once, even beside a compile: without this a start beside `go build -a`
// took twice its quiet time (418 ms p50, 756 ms p95 against 199 ms), the
// build's processes each weighing as much as all sandboxes together. The
// boost costs the host little (a start is 120 to 175 ms of CPU) and cannot
// be used to starve it:
//   - no guest decides when it applies: only the helper starting a
//     machine, and each start ends within ReadyTimeout (what runs then is
//     the desktop's own programs; a rootfs template's could be a former
//     guest's, and gets no more than the quota below for that time);
//   - it is the parent's weight, relative to the host's processes;
//   - every machine's quota still holds: a CPU-hungry guest running while
//     another machine starts gets at most its CPU count.
//
// Inside the parent a starting machine weighs little (startingShares)
// and a running one the default: a start takes the CPU its running
// neighbours leave, and an agent's step is never queued behind another
// machine's boot. Alone in the parent (the common case of one task
// starting), a start gets the whole boosted share all the same. Without
// this, 128 agents stepping while their neighbours booted were slowed to
// 0.3 to 1.7 s a step, and agents held up together went on stepping
// together: the waves kept the 95th percentile of a step's overhead at
// 120 to 260 ms long after the last boot.
//
// The helper itself weighs as much as the boosted parent, in a group of
// its own beside it (HelperFirst): the helper relays every running
// agent's steps and the user's kill switch, and no number of machines,
// starting or running, may take its CPU. Its children that serve one
// machine (the NAT) are moved into that machine's group, to count
// against its quota.
//
// A warm pool's refills are starts too and are weighed alike: they cost
// the same and end as soon.
//
// Only cgroup v1 (hybrid hosts, where the helper owns its cpu hierarchy)
// is weighed; on cgroup v2 the weights are left as they are.
const (
	normalShares   = 1024
	startShares    = 8 * normalShares
	startingShares = normalShares / 16
	helperShares   = startShares
)

// helperGroup is the cgroup v1 cpu folder, beside the machines' parent
// below the helper's own cgroup, that HelperFirst moves the helper into.
const helperGroup = "hivecrew-helper"

// HelperFirst moves the calling process (the helper) into a cpu cgroup of
// its own that weighs as much as its machines do at most, beside theirs
// below its own cgroup: the helper's CPU is not taken by the machines it
// runs. It is done once a process (later calls return the first's
// result); a host without the cgroup v1 cpu hierarchy (cgroup v2) has
// nothing to do.
func HelperFirst() error {
	return helperFirst()
}

var helperFirst = sync.OnceValue(func() error {
	return weighFirst(cgroupRoot, helperGroup, os.Getpid())
})

// weighFirst moves process pid into <its own cpu cgroup>/<name>, made
// with helperShares, in the cgroup v1 cpu hierarchy below root.
func weighFirst(root, name string, pid int) error {
	mount := filepath.Join(root, "cpu")
	if _, err := os.Stat(filepath.Join(mount, "tasks")); err != nil {
		return nil // no cgroup v1 cpu hierarchy
	}
	dir := filepath.Join(mount, ownV1Paths()["cpu"], name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cgroup v1 cpu: %w", err)
	}
	if err := setShares(dir, helperShares); err != nil {
		return err
	}
	return writeCgroup(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
}

// startBoost counts the starts in progress per parent cgroup and sets the
// parent's weight accordingly.
type startBoost struct {
	// mu guards starting and the writes of the parents' weights.
	mu       sync.Mutex
	starting map[string]int // parent cpu cgroup folder -> starts in progress
}

// hold raises parent's weight for a start (parent "": nothing to do) and
// returns what ends the hold, which may be called more than once.
func (b *startBoost) hold(parent string) (release func(), err error) {
	if parent == "" {
		return func() {}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.starting == nil {
		b.starting = map[string]int{}
	}
	if b.starting[parent] == 0 {
		if err := setShares(parent, startShares); err != nil {
			return func() {}, err
		}
	}
	b.starting[parent]++
	return sync.OnceFunc(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.starting[parent]--; b.starting[parent] == 0 {
			delete(b.starting, parent)
			setShares(parent, normalShares) // a group gone with its helper needs none
		}
	}), nil
}

func setShares(dir string, shares int) error {
	return writeCgroup(filepath.Join(dir, "cpu.shares"), strconv.Itoa(shares))
}

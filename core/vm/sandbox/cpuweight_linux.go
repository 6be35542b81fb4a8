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
//   - it is the parent's weight, relative to the host's processes; inside
//     the parent every machine keeps the same weight, so one machine's
//     setup does not take its running neighbours' CPU beyond an equal
//     share (they gain from the boost as much while it lasts);
//   - every machine's quota still holds: a CPU-hungry guest running while
//     another machine starts gets at most its CPU count.
//
// A warm pool's refills are starts too and are weighed up alike: they
// cost the same and end as soon.
//
// Only cgroup v1 (hybrid hosts, where the helper owns its cpu hierarchy)
// is boosted; on cgroup v2 the parent keeps its weight.
const (
	normalShares = 1024
	startShares  = 8 * normalShares
)

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
	if err := os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte(strconv.Itoa(shares)), 0o644); err != nil {
		return fmt.Errorf("cgroup v1 cpu: set the sandboxes' cpu.shares to %d: %w", shares, err)
	}
	return nil
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// All machines' memory together: every machine's cgroup sits below one
// parent (Config.Group, "hivecrew"), and the parent's memory limit
// (Config.MemoryMB) is by default the host's memory less the reserve
// admission keeps free (vm.ReserveMB). Each machine's
// own limit is its size, and the sizes together may add up past the
// host's memory (an idle desktop uses a tenth of its 512 MB): without a
// cap on them all, guests that grew together (a hostile model can ask
// every agent to) would leave the host's kernel to pick a process to
// kill, and it could pick the user's browser or the helper. With the
// parent capped, the kernel reclaims and, failing that, kills within the
// machines' group: a guest's process, reported as the machine's OOM kill.
// The backend then reports vm.Capabilities.MemoryCapped, and admission
// counts what the host has available instead of 4× its memory in caps.

// capMachinesMemory sets the memory limit of the machines' parent group
// (cgroup v2 where the machines' limits go there, else v1's memory
// hierarchy, swap included where it is accounted) to mb.
func capMachinesMemory(root, group string, mb int) error {
	bytes := strconv.FormatInt(int64(mb)<<20, 10)
	if parent, err := v2Parent(root, group); err == nil { // where cgroupLimits puts them
		return writeCgroup(filepath.Join(parent, "memory.max"), bytes)
	}
	mount := filepath.Join(root, "memory")
	if _, err := os.Stat(filepath.Join(mount, "tasks")); err != nil {
		return errors.New("neither cgroup v2's nor v1's memory controller is available")
	}
	dir := filepath.Join(mount, ownV1Paths()["memory"], group)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cgroup v1 memory: %w", err)
	}
	// memsw may not be under memory.limit_in_bytes: it goes first when
	// raising, last when lowering (where writing it first fails).
	memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes")
	_, err := os.Stat(memsw)
	hasSwap := err == nil
	if hasSwap && writeCgroup(memsw, bytes) == nil {
		return writeCgroup(filepath.Join(dir, "memory.limit_in_bytes"), bytes)
	}
	if err := writeCgroup(filepath.Join(dir, "memory.limit_in_bytes"), bytes); err != nil {
		return err
	}
	if hasSwap {
		return writeCgroup(memsw, bytes)
	}
	return nil
}

// writeCgroup sets a cgroup file to v.
func writeCgroup(file, v string) error {
	if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
		return fmt.Errorf("set %s to %s: %w", file, v, err)
	}
	return nil
}

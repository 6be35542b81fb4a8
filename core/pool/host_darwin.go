package pool

import (
	"runtime"

	"golang.org/x/sys/unix"
)

func hostMemoryMB() int {
	if b, err := unix.SysctlUint64("hw.memsize"); err == nil {
		return int(b >> 20)
	}
	return 16 << 10
}

func hostCPUs() int { return runtime.NumCPU() }

// availableMemoryMB is the free and purgeable pages (vm.page_free_count,
// vm.page_purgeable_count) in MB. No macOS backend shares memory (a vz
// guest holds its memory), so admission does not read it there today.
func availableMemoryMB() int {
	free, err := unix.SysctlUint32("vm.page_free_count")
	if err != nil {
		return hostMemoryMB()
	}
	purgeable, _ := unix.SysctlUint32("vm.page_purgeable_count")
	return int((uint64(free) + uint64(purgeable)) * uint64(unix.Getpagesize()) >> 20)
}

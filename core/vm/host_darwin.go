package vm

import "golang.org/x/sys/unix"

// HostMemoryMB is the host's memory (hw.memsize), 16 GB when it cannot be
// read.
func HostMemoryMB() int {
	if b, err := unix.SysctlUint64("hw.memsize"); err == nil {
		return int(b >> 20)
	}
	return 16 << 10
}

// AvailableMemoryMB is the free and purgeable pages (vm.page_free_count,
// vm.page_purgeable_count) in MB. No macOS backend shares memory (a vz
// guest holds its memory), so admission does not read it there today.
func AvailableMemoryMB() int {
	free, err := unix.SysctlUint32("vm.page_free_count")
	if err != nil {
		return HostMemoryMB()
	}
	purgeable, _ := unix.SysctlUint32("vm.page_purgeable_count")
	return int((uint64(free) + uint64(purgeable)) * uint64(unix.Getpagesize()) >> 20)
}

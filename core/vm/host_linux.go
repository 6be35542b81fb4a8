package vm

import (
	"os"
	"strconv"
	"strings"
)

// HostMemoryMB is the host's memory (MemTotal), 16 GB when it cannot be
// read.
func HostMemoryMB() int {
	if mb, ok := meminfoMB("MemTotal:"); ok {
		return mb
	}
	return 16 << 10
}

// AvailableMemoryMB is MemAvailable: what the kernel can give new
// processes without swapping (free memory and reclaimable caches).
func AvailableMemoryMB() int {
	if mb, ok := meminfoMB("MemAvailable:"); ok {
		return mb
	}
	return HostMemoryMB()
}

// meminfoMB reads the field key of /proc/meminfo, in MB.
func meminfoMB(key string) (int, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			if kb, err := strconv.Atoi(f[1]); err == nil {
				return kb / 1024, true
			}
		}
	}
	return 0, false
}

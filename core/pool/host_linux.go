package pool

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

func hostMemoryMB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.Atoi(f[1]); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 16 << 10
}

func hostCPUs() int { return runtime.NumCPU() }

// availableMemoryMB is MemAvailable: what the kernel can give new
// processes without swapping (free memory and reclaimable caches).
func availableMemoryMB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
				if kb, err := strconv.Atoi(f[1]); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return hostMemoryMB()
}

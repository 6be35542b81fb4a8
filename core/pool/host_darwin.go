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

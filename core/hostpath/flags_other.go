//go:build unix && !linux

package hostpath

import "golang.org/x/sys/unix"

// dirFlags open a folder to walk from (without blocking on a FIFO put in
// its place).
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK | unix.O_CLOEXEC

//go:build unix

package files

import (
	"io/fs"
	"os"
	"syscall"
)

// noFollow refuses a symbolic link as the last path element.
const noFollow = syscall.O_NOFOLLOW

// nonBlock opens a FIFO without waiting for its other end.
const nonBlock = syscall.O_NONBLOCK

// ReadUntrusted opens, for reading, a file a guest could have made: a link
// as the last element is refused, and a FIFO opens at once (to be refused
// by the caller's check that it is a regular file) instead of blocking.
const ReadUntrusted = os.O_RDONLY | noFollow | nonBlock

func ownerOf(fi fs.FileInfo) Owner {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return Owner{int(st.Uid), int(st.Gid)}
	}
	return Owner{-1, -1}
}

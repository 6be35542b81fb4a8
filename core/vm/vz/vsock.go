//go:build unix

package vz

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// adoptDescriptor makes a net.Conn of a descriptor that another owner
// keeps and closes: a VZVirtioSocketConnection, which closes its
// descriptor when it is closed or deallocated. It is called while the
// owner is alive (in its completion handler) and never closes fd: it
// duplicates it, and the connection it returns owns only its duplicate.
// So each descriptor is closed once, by its owner.
//
// vz v3.7.1 (socket.go, newVirtioSocketConnection) wraps the owner's
// descriptor in an os.File and closes that, and the connection object
// closes the same number again when it goes, by then perhaps another
// file of the helper's. Hence vsock_darwin_arm64.m, which connects
// without vz's Connect.
func adoptDescriptor(fd int) (net.Conn, error) {
	if fd < 0 {
		return nil, fmt.Errorf("vsock: the connection has no descriptor (%d): it is closed", fd)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("vsock: duplicate the connection's descriptor: %w", err)
	}
	f := os.NewFile(uintptr(dup), "vsock")
	// FileConn duplicates again, for the network poller; closing f then
	// closes dup, which is ours.
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("vsock: %w", err)
	}
	return c, nil
}

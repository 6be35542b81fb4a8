//go:build unix

package vz

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// ownedTwice plays a VZVirtioSocketConnection around adopt: the owner
// holds one end of a socket pair, adopt makes a connection of it, the
// connection is used and closed, the helper opens files of its own (which
// take the lowest free numbers, as on macOS), and then the owner closes
// its descriptor, as the framework does when the connection object goes.
// It returns an error if the owner's descriptor was closed by then, or if
// the owner's close closed one of the helper's files instead.
func ownedTwice(t *testing.T, adopt func(fd int) (net.Conn, error)) error {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	owner, guest := pair[0], os.NewFile(uintptr(pair[1]), "guest")
	defer guest.Close()
	c, err := adopt(owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(guest, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("the guest read %q, %v", buf, err)
	}
	c.Close()
	var files []*os.File
	for i := range 4 {
		f, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var problems []error
	if _, err := unix.FcntlInt(uintptr(owner), unix.F_GETFD, 0); err != nil {
		problems = append(problems, fmt.Errorf("the owner's descriptor %d was closed under it: %w", owner, err))
	}
	for _, f := range files {
		if int(f.Fd()) == owner {
			problems = append(problems, fmt.Errorf("descriptor %d was reused by %s while the owner still held it", owner, f.Name()))
		}
	}
	// The owner closes its descriptor, once.
	if err := unix.Close(owner); err != nil {
		problems = append(problems, fmt.Errorf("the owner's close: %w", err))
	}
	for _, f := range files {
		if _, err := f.Stat(); err != nil {
			problems = append(problems, fmt.Errorf("%s was closed by the owner's close: %w", f.Name(), err))
		}
	}
	return errors.Join(problems...)
}

// TestVsockDescriptorClosedOnce: the connection Hivecrew makes of a
// VZVirtioSocketConnection's descriptor works, and leaves the descriptor
// to its owner: no descriptor is closed twice. The way vz v3.7.1 does it
// fails the same check.
func TestVsockDescriptorClosedOnce(t *testing.T) {
	if err := ownedTwice(t, adoptDescriptor); err != nil {
		t.Fatal(err)
	}
	vz371 := func(fd int) (net.Conn, error) { // socket.go, newVirtioSocketConnection
		f := os.NewFile(uintptr(fd), "")
		defer f.Close()
		return net.FileConn(f)
	}
	if err := ownedTwice(t, vz371); err == nil {
		t.Fatal("the check passed vz v3.7.1's way, which closes the owner's descriptor: it cannot tell")
	}
	if _, err := adoptDescriptor(-1); err == nil {
		t.Fatal("a closed connection's descriptor (-1) was adopted")
	}
}

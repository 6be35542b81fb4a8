//go:build linux || darwin

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth returns the width in columns of the terminal w writes to,
// and false when w is not a terminal.
func terminalWidth(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, ioctlGetTermios); err != nil {
		return 0, false
	}
	if ws, err := unix.IoctlGetWinsize(fd, ioctlGetWinsize); err == nil && ws.Col > 0 {
		return int(ws.Col), true
	}
	return 80, true
}

package secrets

import (
	"path/filepath"
	"strconv"
)

// sessionBusAddress returns the D-Bus session bus address the Secret Service
// client will dial, and whether one exists without launching a bus. It
// mirrors, in order, what github.com/keybase/dbus looks at before it falls
// back to running dbus-launch (which this package must never trigger): a
// DBUS_SESSION_BUS_ADDRESS other than "autolaunch:", then the socket
// /run/user/<uid>/bus. (It then tries /run/user/<uid>/dbus-session, which
// only old systems write; without the socket this package takes no bus.)
// exists reports whether a path exists.
func sessionBusAddress(getenv func(string) string, uid int, exists func(string) bool) (string, bool) {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a, true
	}
	bus := filepath.Join("/run/user", strconv.Itoa(uid), "bus")
	if exists(bus) {
		return "unix:path=" + bus, true
	}
	return "", false
}

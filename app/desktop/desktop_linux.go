package desktop

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// Open opens a page in the default browser (xdg-open).
func Open(link string) error {
	cmd := exec.Command("xdg-open", link)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("open %s in the browser (xdg-open): %w", link, err)
	}
	go cmd.Wait()
	return nil
}

// Notify shows a notification through org.freedesktop.Notifications (task,
// what it is about, is not used: a click opens nothing).
func Notify(task, title, body string) error {
	conn, err := dbus.SessionBus()
	if err != nil {
		return fmt.Errorf("notify: no session bus: %w", err)
	}
	obj := conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	call := obj.Call("org.freedesktop.Notifications.Notify", 0, "Hivecrew", uint32(0), "", title, body,
		[]string{}, map[string]dbus.Variant{"desktop-entry": dbus.MakeVariant("hivecrew")}, int32(-1))
	if call.Err != nil {
		return fmt.Errorf("notify: %w", call.Err)
	}
	return nil
}

// SessionBusProblem says why the menu cannot show (no session bus, or no
// tray host on it), or "" when it can.
func SessionBusProblem() string {
	conn, err := dbus.SessionBus()
	if err != nil {
		return "no D-Bus session bus (" + err.Error() + "): the menu-bar icon needs a desktop session"
	}
	var owner string
	err = conn.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, "org.kde.StatusNotifierWatcher").Store(&owner)
	if err != nil {
		return "no tray host on the session bus (no StatusNotifierWatcher): install a tray extension (e.g. AppIndicator for GNOME) to see the menu-bar icon"
	}
	return ""
}

// Autostart is the XDG autostart entry that starts the menu-bar app at
// login.
type Autostart struct{ App string }

func (a Autostart) path() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "autostart", "hivecrew.desktop")
}

// Enabled reports whether the entry exists.
func (a Autostart) Enabled() bool {
	_, err := os.Stat(a.path())
	return err == nil
}

// Set writes or removes the entry.
func (a Autostart) Set(on bool) error {
	if !on {
		if err := os.Remove(a.path()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(a.path()), 0o755); err != nil {
		return err
	}
	return os.WriteFile(a.path(), []byte(AutostartEntry(a.App)), 0o644)
}

// StartHelperService starts the helper as a systemd --user service
// (installing its unit), when systemd manages this user's session. It
// reports false when there is no user systemd, so that the caller starts
// the helper as a child process instead.
func StartHelperService(helper string) (bool, error) {
	if _, err := exec.LookPath("systemctl"); err != nil {
		return false, nil
	}
	if exec.Command("systemctl", "--user", "show-environment").Run() != nil {
		return false, nil // no user manager for this session
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false, err
		}
		dir = filepath.Join(home, ".config")
	}
	unit := filepath.Join(dir, "systemd", "user", SystemdUnit)
	if err := os.MkdirAll(filepath.Dir(unit), 0o755); err != nil {
		return false, err
	}
	if err := os.WriteFile(unit, []byte(SystemdUnitFile(helper)), 0o644); err != nil {
		return false, err
	}
	for _, args := range [][]string{{"daemon-reload"}, {"start", SystemdUnit}} {
		if out, err := exec.Command("systemctl", append([]string{"--user"}, args...)...).CombinedOutput(); err != nil {
			return false, fmt.Errorf("systemctl --user %v: %v: %s", args, err, out)
		}
	}
	time.Sleep(100 * time.Millisecond)
	return true, nil
}

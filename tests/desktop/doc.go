// Package desktop tests the menu-bar app's Linux side on a real X display
// and D-Bus session: the tray (a StatusNotifierItem with a dbusmenu) read
// and clicked over D-Bus through a StatusNotifierWatcher of the test's own,
// and the kill-switch shortcut pressed through XTEST; both stop the running
// agents of a real helper.
package desktop

// Package linux is the guest agent's driver for Linux desktops on X11:
// screenshots with GetImage, mouse and keyboard through XTEST (any Unicode
// text by remapping spare keycodes), the clipboard through X selections, the
// frontmost and running apps from EWMH properties, the accessibility tree over
// AT-SPI (D-Bus), and apps, files and URLs through desktop entries and
// xdg-open. It builds only on Linux.
package linux

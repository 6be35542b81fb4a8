// Package killswitch is the global shortcut that stops every agent
// (Settings' killSwitchShortcut: ⌘⇧⎋ on macOS, Ctrl+Shift+Escape on
// Linux). Parse (core/shortcut, which Settings validate with) turns the
// setting into modifiers and a key; Listen grabs the shortcut system-wide
// and calls back on every press until its context ends: on Linux/X11 with
// a passive key grab (pure Go, XGB), on macOS with golang.design/x/hotkey.
package killswitch

import "github.com/hivecrew/hivecrew/core/shortcut"

// Shortcut is a parsed shortcut.
type Shortcut = shortcut.Shortcut

// Parse reads a shortcut such as "ctrl+shift+escape", refusing one that
// macOS 15 will not register.
func Parse(s string) (Shortcut, error) { return shortcut.Parse(s) }

// Package macapp runs AppKit's application loop for Hivecrew's two macOS
// processes, the menu-bar app and the helper, with every handler of the
// application delegate set before the delegate is installed.
//
// NSApplication asks its delegate which optional methods it implements
// when the delegate is installed (setDelegate:) and may keep the answers.
// darwinkit's delegate answers respondsToSelector: from the handlers set
// at the moment it is asked, and its macos.RunApp installs the delegate
// before it calls back: a handler set in that callback, such as the
// helper's applicationShouldTerminate: (the gate that records interrupted
// tasks at logout), may never be called. Run takes the handlers first.
// make check-darwin's lint refuses macos.RunApp and any handler set on a
// delegate after it was installed.
package macapp

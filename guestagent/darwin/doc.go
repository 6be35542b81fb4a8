// Package darwin is the guest agent's driver for macOS guests:
// ScreenCaptureKit screenshots (SCScreenshotManager), CGEvent mouse and
// keyboard input (text on the keys of the current layout, UCKeyTranslate;
// what no key types through CGEventKeyboardSetUnicodeString),
// the AXUIElement accessibility tree, NSWorkspace for apps, files and URLs,
// and NSPasteboard. The cgo and Objective-C code is darwin-only and thin; key
// maps and other decisions live in portable files tested on every OS.
package darwin

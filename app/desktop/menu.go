package desktop

// The app is an accessory (a menu-bar icon, no Dock icon, no menu bar of
// its own), but AppKit still sends ⌘-key equivalents through NSApp's main
// menu: without one, ⌘C, ⌘V, ⌘X, ⌘A, ⌘Z and ⌘W do nothing in the web
// windows, and a user cannot even paste an API key. MainMenu is that hidden
// menu; desktop_darwin.go builds the NSMenu from it item by item.

// MenuItem is one item of the main menu. An item without a title is a
// separator.
type MenuItem struct {
	Title string
	// Action is the selector sent to the first responder (the web view,
	// the window), as AppKit's standard items do.
	Action string
	// Key is the key equivalent, pressed with ⌘ (and ⇧ with Shift).
	Key   string
	Shift bool
}

// Menu is one menu of the main menu.
type Menu struct {
	Title string
	Items []MenuItem
}

// MainMenu is the app's hidden main menu. The first menu is the
// application menu (AppKit names it after the app whatever its title).
func MainMenu() []Menu {
	return []Menu{
		{Title: "Hivecrew", Items: []MenuItem{
			{Title: "Hide Hivecrew", Action: "hide:", Key: "h"},
		}},
		{Title: "Edit", Items: []MenuItem{
			{Title: "Undo", Action: "undo:", Key: "z"},
			{Title: "Redo", Action: "redo:", Key: "z", Shift: true},
			{},
			{Title: "Cut", Action: "cut:", Key: "x"},
			{Title: "Copy", Action: "copy:", Key: "c"},
			{Title: "Paste", Action: "paste:", Key: "v"},
			{Title: "Select All", Action: "selectAll:", Key: "a"},
		}},
		{Title: "Window", Items: []MenuItem{
			{Title: "Close", Action: "performClose:", Key: "w"},
			{Title: "Minimize", Action: "performMiniaturize:", Key: "m"},
		}},
	}
}

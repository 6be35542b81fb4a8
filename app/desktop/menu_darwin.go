package desktop

import (
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/objc"
)

// InstallMainMenu gives the app its hidden main menu (MainMenu): the
// accessory app shows no menu bar, but AppKit sends key equivalents
// through NSApp's main menu to the key window's first responder, so ⌘C,
// ⌘V, ⌘Z, ⌘W and the rest work in the web windows. Call it on the main
// thread once the application exists.
func InstallMainMenu(app appkit.Application) {
	bar := appkit.NewMenuWithTitle("")
	for _, m := range MainMenu() {
		menu := appkit.NewMenuWithTitle(m.Title)
		for _, it := range m.Items {
			if it.Title == "" {
				menu.AddItem(appkit.MenuItem_SeparatorItem())
				continue
			}
			// A nil target: the action goes to the first responder.
			item := appkit.NewMenuItemWithTitleActionKeyEquivalent(it.Title, objc.Sel(it.Action), it.Key)
			mask := appkit.EventModifierFlagCommand
			if it.Shift {
				mask |= appkit.EventModifierFlagShift
			}
			item.SetKeyEquivalentModifierMask(mask)
			menu.AddItem(item)
		}
		holder := appkit.NewMenuItemWithTitleActionKeyEquivalent(m.Title, objc.Selector{}, "")
		holder.SetSubmenu(menu)
		bar.AddItem(holder)
	}
	app.SetMainMenu(bar)
}

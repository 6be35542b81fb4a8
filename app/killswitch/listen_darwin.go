package killswitch

import (
	"context"
	"fmt"

	"github.com/progrium/darwinkit/dispatch"
	"golang.design/x/hotkey"

	"github.com/hivecrew/hivecrew/core/shortcut"
)

// Listen registers sc as a global hotkey (golang.design/x/hotkey, Carbon
// hot keys: no Accessibility permission needed) and calls fire on every
// press until ctx ends. display is ignored. The app's NSApplication run
// loop must be running (the menu-bar app runs it on the main thread).
func Listen(ctx context.Context, display string, sc Shortcut, fire func()) error {
	var mods []hotkey.Modifier
	for _, m := range sc.Mods {
		switch m {
		case shortcut.Cmd:
			mods = append(mods, hotkey.ModCmd)
		case shortcut.Ctrl:
			mods = append(mods, hotkey.ModCtrl)
		case shortcut.Shift:
			mods = append(mods, hotkey.ModShift)
		case shortcut.Option:
			mods = append(mods, hotkey.ModOption)
		}
	}
	code, ok := shortcut.MacKeyCodes[sc.Key]
	if !ok {
		return fmt.Errorf("kill switch: key %q has no macOS key code", sc.Key)
	}
	hk := hotkey.New(mods, hotkey.Key(code))
	if err := hk.Register(); err != nil {
		return fmt.Errorf("kill switch: register %s: %w", sc.Symbols(true), err)
	}
	// Carbon's hot keys belong to the main thread: hotkey registers there
	// (dispatch_sync), but its Unregister runs on the caller's thread,
	// where it would also race the main thread's key-down callback that
	// sends on the channels Unregister closes.
	defer dispatch.MainQueue().DispatchAsync(func() { hk.Unregister() })
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hk.Keydown():
			fire()
		}
	}
}

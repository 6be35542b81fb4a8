package killswitch

import (
	"context"
	"fmt"

	"github.com/progrium/darwinkit/dispatch"
	"golang.design/x/hotkey"
)

// Listen registers sc as a global hotkey (golang.design/x/hotkey, Carbon
// hot keys: no Accessibility permission needed) and calls fire on every
// press until ctx ends. display is ignored. The app's NSApplication run
// loop must be running (the menu-bar app runs it on the main thread).
func Listen(ctx context.Context, display string, sc Shortcut, fire func()) error {
	var mods []hotkey.Modifier
	for _, m := range sc.Mods {
		switch m {
		case Cmd:
			mods = append(mods, hotkey.ModCmd)
		case Ctrl:
			mods = append(mods, hotkey.ModCtrl)
		case Shift:
			mods = append(mods, hotkey.ModShift)
		case Option:
			mods = append(mods, hotkey.ModOption)
		}
	}
	key, ok := macKeys[sc.Key]
	if !ok {
		return fmt.Errorf("kill switch: key %q has no macOS key code", sc.Key)
	}
	hk := hotkey.New(mods, key)
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

// macKeys maps key names to macOS virtual key codes.
var macKeys = map[string]hotkey.Key{
	"escape": hotkey.KeyEscape, "space": hotkey.KeySpace, "return": hotkey.KeyReturn, "tab": hotkey.KeyTab,
	"delete": hotkey.KeyDelete,
	"a":      hotkey.KeyA, "b": hotkey.KeyB, "c": hotkey.KeyC, "d": hotkey.KeyD, "e": hotkey.KeyE, "f": hotkey.KeyF,
	"g": hotkey.KeyG, "h": hotkey.KeyH, "i": hotkey.KeyI, "j": hotkey.KeyJ, "k": hotkey.KeyK, "l": hotkey.KeyL,
	"m": hotkey.KeyM, "n": hotkey.KeyN, "o": hotkey.KeyO, "p": hotkey.KeyP, "q": hotkey.KeyQ, "r": hotkey.KeyR,
	"s": hotkey.KeyS, "t": hotkey.KeyT, "u": hotkey.KeyU, "v": hotkey.KeyV, "w": hotkey.KeyW, "x": hotkey.KeyX,
	"y": hotkey.KeyY, "z": hotkey.KeyZ,
	"0": hotkey.Key0, "1": hotkey.Key1, "2": hotkey.Key2, "3": hotkey.Key3, "4": hotkey.Key4,
	"5": hotkey.Key5, "6": hotkey.Key6, "7": hotkey.Key7, "8": hotkey.Key8, "9": hotkey.Key9,
	"f1": hotkey.KeyF1, "f2": hotkey.KeyF2, "f3": hotkey.KeyF3, "f4": hotkey.KeyF4, "f5": hotkey.KeyF5, "f6": hotkey.KeyF6,
	"f7": hotkey.KeyF7, "f8": hotkey.KeyF8, "f9": hotkey.KeyF9, "f10": hotkey.KeyF10, "f11": hotkey.KeyF11, "f12": hotkey.KeyF12,
}

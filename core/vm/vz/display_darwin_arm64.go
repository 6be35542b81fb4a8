package vz

// The takeover window: an NSWindow hosting a VZVirtualMachineView bound to
// the running VZVirtualMachine. github.com/Code-Hex/vz/v3 does not expose
// the Objective-C object behind *vz.VirtualMachine, and only offers a
// window that owns its own application loop; this file reads the pointer
// from the struct layout of vz v3.7.1 (pinned in go.mod: re-check this
// file when upgrading) and builds the view with darwinkit's objc runtime.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	codehex "github.com/Code-Hex/vz/v3"
	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"

	"github.com/hivecrew/hivecrew/core/vm"
)

var _ vm.Displayer = (*Machine)(nil)

// vzObject returns the VZVirtualMachine behind v: vz v3.7.1's
// VirtualMachine embeds *objc.Pointer (field "pointer"), whose first field
// is the object pointer.
func vzObject(v *codehex.VirtualMachine) (unsafe.Pointer, error) {
	f := reflect.ValueOf(v).Elem().FieldByName("pointer")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return nil, errors.New("vz: VirtualMachine has no object pointer (vz's layout changed: update display_darwin_arm64.go)")
	}
	holder := unsafe.Pointer(f.Pointer()) // *objc.Pointer
	obj := *(*unsafe.Pointer)(holder)     // its _ptr field
	if obj == nil {
		return nil, errors.New("vz: the VM object is nil")
	}
	return obj, nil
}

// displays keeps the open takeover windows by VM; mu guards it.
var (
	mu       sync.Mutex
	displays = map[string]appkit.Window{}
)

// ShowDisplay implements vm.Displayer: it opens the VM's window on the main
// thread (the helper runs an accessory NSApplication there), or brings it
// forward. While the window is key it captures the keyboard (system keys
// included) and the pointer. closed is called when the user closes it; the
// VM keeps running. If ctx ends before the main thread gets to it, no
// window opens, then or later.
func (m *Machine) ShowDisplay(ctx context.Context, closed func()) error {
	m.mu.Lock()
	v := m.v
	m.mu.Unlock()
	if v == nil {
		return vm.ErrNotRunning
	}
	ptr, err := vzObject(v)
	if err != nil {
		return err
	}
	// A takeover that timed out (and was handed back) before the main
	// thread got to it never opens its window (onMain).
	return onMain(ctx, dispatch.MainQueue().DispatchAsync, func() error {
		mu.Lock()
		w, open := displays[m.spec.ID]
		mu.Unlock()
		if open {
			w.MakeKeyAndOrderFront(nil)
			activate()
			return nil
		}
		width, height := float64(m.cfg.DisplayWidth), float64(m.cfg.DisplayHeight)
		rect := foundation.Rect{Size: foundation.Size{Width: width, Height: height}}
		// alloc/init: this code owns the view until the window holds it.
		view := objc.Call[objc.Object](objc.Call[objc.Object](objc.GetClass("VZVirtualMachineView"), objc.Sel("alloc")), objc.Sel("initWithFrame:"), rect)
		if view.Ptr() == nil {
			return errors.New("vz: could not create a VZVirtualMachineView")
		}
		objc.Call[objc.Void](view, objc.Sel("setVirtualMachine:"), objc.ObjectFrom(ptr))
		objc.Call[objc.Void](view, objc.Sel("setCapturesSystemKeys:"), true)
		w = appkit.NewWindowWithContentRectStyleMaskBackingDefer(rect,
			appkit.WindowStyleMaskTitled|appkit.WindowStyleMaskClosable|appkit.WindowStyleMaskMiniaturizable|appkit.WindowStyleMaskResizable,
			appkit.BackingStoreBuffered, false)
		// Held until it closes, and released then on this (the main)
		// thread: not objc.Retain, whose release runs on the garbage
		// collector's goroutine whenever it gets to it.
		w.Retain()
		w.SetTitle(fmt.Sprintf("Hivecrew — %s (you are in control)", m.spec.Name))
		w.SetReleasedWhenClosed(false)
		w.SetContentView(appkit.ViewFrom(view.Ptr()))
		view.Release() // the window holds it now
		delegate := &appkit.WindowDelegate{}
		delegate.SetWindowWillClose(func(foundation.Notification) {
			mu.Lock()
			if displays[m.spec.ID] == w {
				delete(displays, m.spec.ID)
			}
			mu.Unlock()
			// The view holds the VM object: let go of it, and of the
			// window once AppKit has finished closing it, so that closed
			// takeovers do not keep old VMs in memory.
			objc.Call[objc.Void](view, objc.Sel("setVirtualMachine:"), objc.Object{})
			dispatch.MainQueue().DispatchAsync(func() { w.Release() })
			if closed != nil {
				go closed()
			}
		})
		w.SetDelegate(delegate)
		w.Center()
		w.MakeKeyAndOrderFront(nil)
		w.MakeFirstResponder(appkit.ViewFrom(view.Ptr()))
		activate()
		mu.Lock()
		displays[m.spec.ID] = w
		mu.Unlock()
		return nil
	})
}

// activate brings the helper forward for a takeover. macOS 14 made
// activation cooperative (activateIgnoringOtherApps: does nothing there):
// NSApplication.activate succeeds when the active app (the Hivecrew app,
// whose web window asked for the takeover) has yielded to the helper
// (yieldActivationToApplicationWithBundleIdentifier:, done by the app for
// com.hivecrew.helper). darwinkit v0.5.0 does not bind activate.
func activate() {
	objc.Call[objc.Void](appkit.Application_SharedApplication(), objc.Sel("activate"))
}

// HideDisplay implements vm.Displayer.
func (m *Machine) HideDisplay() { m.closeDisplay() }

// closeDisplay closes the VM's window, if open (also when the VM goes).
func (m *Machine) closeDisplay() {
	dispatch.MainQueue().DispatchAsync(func() {
		mu.Lock()
		w, ok := displays[m.spec.ID]
		delete(displays, m.spec.ID)
		mu.Unlock()
		if ok {
			w.Close()
		}
	})
}

package desktop

/*
#cgo CFLAGS: -x objective-c -fobjc-arc -mmacosx-version-min=15.0
#cgo LDFLAGS: -framework Foundation -framework UserNotifications
#include <stdlib.h>
#include "notify_darwin.h"
*/
import "C"

import (
	"errors"
	"runtime/cgo"
	"unsafe"

	"github.com/google/uuid"
)

// errNoBundle: macOS delivers notifications only to bundled apps.
var errNoBundle = errors.New("notifications need Hivecrew.app: this hivecrew runs outside an app bundle (no bundle identifier)")

// Notify delivers a user notification about task ("" for none) through
// UNUserNotificationCenter (notify_darwin.m); the first one asks for
// permission. Outside an app bundle it returns errNoBundle instead of
// crashing.
func Notify(task, title, body string) error {
	id, ct, cti, cb := C.CString(uuid.NewString()), C.CString(task), C.CString(title), C.CString(body)
	defer C.free(unsafe.Pointer(id))
	defer C.free(unsafe.Pointer(ct))
	defer C.free(unsafe.Pointer(cti))
	defer C.free(unsafe.Pointer(cb))
	return notifyResult(C.hc_notify(id, ct, cti, cb))
}

func notifyResult(code C.int) error {
	switch code {
	case C.HC_NOTIFY_OK:
		return nil
	case C.HC_NOTIFY_NO_BUNDLE:
		return errNoBundle
	}
	return errors.New("notifications: the user notification center is not available")
}

// HandleNotifications makes the app the notification center's delegate:
// notifications show as banners while a Hivecrew window is in front, and
// a click opens the page NotificationTarget names with open (a web UI
// path), on its own goroutine. Call it once, on the main thread, before
// the app finishes launching (applicationWillFinishLaunching:).
func HandleNotifications(open func(path string)) error {
	// The handle lives as long as the app: the delegate keeps it.
	h := cgo.NewHandle(open)
	if err := notifyResult(C.hc_notify_set_delegate(C.uintptr_t(h))); err != nil {
		h.Delete()
		return err
	}
	return nil
}

//export hcNotificationResponse
func hcNotificationResponse(h C.uintptr_t, action, task *C.char) {
	open, ok := cgo.Handle(h).Value().(func(string))
	if !ok {
		return
	}
	if path, ok := NotificationTarget(C.GoString(action), C.GoString(task)); ok {
		go open(path)
	}
}

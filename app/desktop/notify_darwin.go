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
	"unsafe"

	"github.com/google/uuid"
)

// errNoBundle: macOS delivers notifications only to bundled apps.
var errNoBundle = errors.New("notifications need Hivecrew.app: this hivecrew runs outside an app bundle (no bundle identifier)")

// Notify delivers a user notification through UNUserNotificationCenter
// (notify_darwin.m); the first one asks for permission. Outside an app
// bundle it returns errNoBundle instead of crashing.
func Notify(title, body string) error {
	id, ct, cb := C.CString(uuid.NewString()), C.CString(title), C.CString(body)
	defer C.free(unsafe.Pointer(id))
	defer C.free(unsafe.Pointer(ct))
	defer C.free(unsafe.Pointer(cb))
	switch C.hc_notify(id, ct, cb) {
	case C.HC_NOTIFY_OK:
		return nil
	case C.HC_NOTIFY_NO_BUNDLE:
		return errNoBundle
	}
	return errors.New("notifications: the user notification center is not available")
}
